"""The parts of a run the lifecycle (:mod:`loadgen.running.lifecycle`) adds when a workload asks:
catch-up and mixed runs, rate control, outage watching."""
