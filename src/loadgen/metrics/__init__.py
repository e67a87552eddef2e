"""Prometheus metrics export: a run's or a worker's interval figures on an opt-in HTTP port.

:mod:`.families` turns one immutable view into metric families, :mod:`.board` keeps the current
view (updated at interval ends), :mod:`.endpoint` serves it; the board is one of a run's listeners
(:mod:`loadgen.engine.listeners`).
"""
