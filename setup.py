"""The compiled parts, optional: without a C compiler the package installs pure Python.

``loadgen.engine._hotpath`` (the recorders) times acknowledgements with
``clock_gettime(CLOCK_MONOTONIC)`` against send times the producer loop took with
``time.perf_counter_ns()``, and deliveries with ``clock_gettime(CLOCK_REALTIME)`` against
``time.time_ns()`` stamps; ``loadgen.engine._burst`` (the producer loop's burst) reads the same two
clocks in place of those functions. So both are built only where Python reads those same clocks
(Linux); elsewhere (macOS, Windows) the pure-Python engine runs, as it does without a compiler.
"""

import time

from setuptools import Extension, find_packages, setup

PYTHON_READS_THE_C_CLOCKS = (
    time.get_clock_info("perf_counter").implementation == "clock_gettime(CLOCK_MONOTONIC)"
    and time.get_clock_info("time").implementation == "clock_gettime(CLOCK_REALTIME)"
)

HEADERS = [f"src/loadgen/engine/{name}.h" for name in ("_clock", "_column", "_idmap", "_receipts")]
"""What the modules include: the clocks, int conversion and the stamp prefix's layout (both);
columns, the id map and the subscription's receipts (the recorders)."""

setup(
    packages=find_packages(
        "src", include=["loadgen", "loadgen.*", "loadgen_drivers", "loadgen_drivers.*"]
    ),
    package_dir={"": "src"},
    ext_modules=[
        Extension(
            f"loadgen.engine.{name}",
            [f"src/loadgen/engine/{name}.c"],
            depends=HEADERS,
            optional=True,
        )
        for name in ("_hotpath", "_burst")
    ]
    if PYTHON_READS_THE_C_CLOCKS
    else [],
)
