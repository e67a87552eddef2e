"""The compiled parts, optional: without a C compiler the package installs pure Python.

``loadgen._hotpath`` (the recorders) times acknowledgements with
``clock_gettime(CLOCK_MONOTONIC)`` against send times the producer loop took with
``time.perf_counter_ns()``, and deliveries with ``clock_gettime(CLOCK_REALTIME)`` against
``time.time_ns()`` stamps; ``loadgen._burst`` (the producer loop's burst) reads the same two
clocks in place of those functions. So both are built only where Python reads those same clocks
(Linux); elsewhere (macOS, Windows) the pure-Python engine runs, as it does without a compiler.
"""

import time

from setuptools import Extension, setup

PYTHON_READS_THE_C_CLOCKS = (
    time.get_clock_info("perf_counter").implementation == "clock_gettime(CLOCK_MONOTONIC)"
    and time.get_clock_info("time").implementation == "clock_gettime(CLOCK_REALTIME)"
)

CLOCK_H = "src/loadgen/_clock.h"
"""What both modules share (the clocks, int conversion, the stamp prefix's layout)."""

setup(
    ext_modules=[
        Extension(f"loadgen.{name}", [f"src/loadgen/{name}.c"], depends=[CLOCK_H], optional=True)
        for name in ("_hotpath", "_burst")
    ]
    if PYTHON_READS_THE_C_CLOCKS
    else [],
)
