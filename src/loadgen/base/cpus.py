"""Pinning loadgen to chosen CPUs (``loadgen run --cpus``).

Why: a client that acknowledges through Python callbacks from a native I/O thread hands the
GIL to that thread and back for every message, and on different cores each hand-off is a
cross-core wake-up. Pinning helps such a client and gains nothing for one that acknowledges on
the sending thread (bench/results/clients.md "CPU pinning and the other clients"), hence an
option, not a default.

Linux applies the affinity to the calling thread, and every thread inherits it from the thread
that starts it: pin before any driver starts its threads, and after starting a local broker
(a child process would inherit it as well).
"""

from __future__ import annotations

import os

from loadgen.base.errors import ConfigError

OPTION = "--cpus"


def available_cpus() -> frozenset[int] | None:
    """The CPUs this thread may run on, or ``None`` where the OS does not say (not Linux)."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    return frozenset(os.sched_getaffinity(0))


def _ranges(cpus: frozenset[int]) -> str:
    """``{0, 1, 2, 5}`` → ``"0-2,5"``."""
    spans: list[list[int]] = []
    for cpu in sorted(cpus):
        if spans and cpu == spans[-1][1] + 1:
            spans[-1][1] = cpu
        else:
            spans.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def parse_cpus(text: str) -> frozenset[int]:
    """``"1"``, ``"0,2"`` or ``"0-3"`` (mixed freely) → the set of CPU numbers."""
    cpus: set[int] = set()
    try:
        for part in text.split(","):
            first, dash, last = part.strip().partition("-")
            low = int(first)
            high = int(last) if dash else low
            if low < 0 or high < low:
                raise ValueError(part)
            cpus.update(range(low, high + 1))
    except ValueError:
        raise ConfigError(
            f"{text!r} is not a CPU list",
            path=OPTION,
            value=text,
            allowed="CPU numbers like 1, 0,2 or 0-3",
        ) from None
    return frozenset(cpus)


def usable_cpus(text: str) -> frozenset[int]:
    """The CPUs in ``text``, checked against the ones this process may use."""
    cpus = parse_cpus(text)
    available = available_cpus()
    if available is None:
        raise ConfigError(
            "CPU pinning is not supported on this OS", path=OPTION, value=text, allowed="Linux"
        )
    if not cpus <= available:
        raise ConfigError(
            f"CPU {_ranges(cpus - available)} is not available to this process",
            path=OPTION,
            value=text,
            allowed=_ranges(available),
        )
    return cpus


def pin(cpus: frozenset[int]) -> None:
    """Restrict this thread, and every thread it starts from now on, to ``cpus``."""
    os.sched_setaffinity(0, cpus)
