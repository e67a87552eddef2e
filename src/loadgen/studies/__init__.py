"""Studies: many runs toward one answer (a rate sweep, an SLO search, a matrix of settings).

They sit above :mod:`loadgen.running.runner`, which they call once per point, and below the CLI.
"""
