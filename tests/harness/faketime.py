"""A process whose wall clock is off, for clock-correction tests and benchmarks.

Debian's ``libfaketime``, preloaded, shifts what the process reads from the wall clock and
leaves the monotonic clock alone, so a ``loadgen worker`` started with :func:`skewed_env` acts
like one on a host whose clock is ``seconds`` ahead.
"""

from __future__ import annotations

from pathlib import Path

LIBRARY = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")
INSTALL_HINT = "apt-get install libfaketime"


def faketime_installed() -> bool:
    return LIBRARY.exists()


def skewed_env(seconds: float) -> dict[str, str]:
    """Environment variables that put a process's wall clock ``seconds`` ahead (behind if
    negative) from its start."""
    return {
        "LD_PRELOAD": str(LIBRARY),
        "FAKETIME": f"{seconds:+}",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_NO_CACHE": "1",
    }
