"""The one compiled part, optional: without a C compiler the package installs pure Python.

``loadgen._hotpath`` times acknowledgements with ``clock_gettime(CLOCK_MONOTONIC)`` against send
times the producer loop took with ``time.perf_counter_ns()``, and deliveries with
``clock_gettime(CLOCK_REALTIME)`` against ``time.time_ns()`` stamps. So it is built only where
Python reads those same clocks (Linux); elsewhere (macOS, Windows) the pure-Python engine
records, as it does without a compiler.
"""

import time

from setuptools import Extension, setup

PYTHON_READS_THE_C_CLOCKS = (
    time.get_clock_info("perf_counter").implementation == "clock_gettime(CLOCK_MONOTONIC)"
    and time.get_clock_info("time").implementation == "clock_gettime(CLOCK_REALTIME)"
)

setup(
    ext_modules=[Extension("loadgen._hotpath", ["src/loadgen/_hotpath.c"], optional=True)]
    if PYTHON_READS_THE_C_CLOCKS
    else [],
)
