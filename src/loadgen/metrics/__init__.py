"""Prometheus metrics export: a run's or a worker's interval figures on an opt-in HTTP port.

:mod:`.families` turns one immutable view into metric families, :mod:`.board` keeps the current
view (updated at interval ends), :mod:`.endpoint` serves it, and :func:`.run.publishing` wires a
board into one run's callbacks.
"""
