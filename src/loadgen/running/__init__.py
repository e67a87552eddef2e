"""One run, from its request to a result file: the runner, the lifecycle and its scenarios,
hooks, stop handling, SLO judgement and the probe."""
