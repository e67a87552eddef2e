"""One run, from its request to a result file: the runner, its scenarios, hooks, stop
handling, SLO judgement and the probe."""
