"""The result's ``clientCpu`` block: what the run's own processes cost per message, and whether
the host left them waiting for a CPU (:mod:`loadgen.base.cpu_use`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from loadgen.base import calibration
from loadgen.engine.stats import IntervalStats


def client_cpu_fields(measured: Sequence[IntervalStats]) -> dict[str, Any] | None:
    """Over the measured intervals, summed over the run's processes; ``None`` where nothing was
    measured (no schedstat, or no measured interval)."""
    cpu_ns = sum(s.cpu_ns for s in measured)
    wait_ns = sum(s.cpu_wait_ns for s in measured)
    slices = sum(s.cpu_slices for s in measured)
    if cpu_ns <= 0:
        return None
    messages = sum(s.sent + s.received for s in measured)
    share = wait_ns / (cpu_ns + wait_ns)
    wait_per_slice_us = wait_ns / 1e3 / slices if slices else 0.0
    host = calibration.current()
    return {
        "cpuSeconds": cpu_ns / 1e9,
        "runQueueWaitSeconds": wait_ns / 1e9,
        "runQueueWaitShare": share,
        "timeSlices": slices,
        "runQueueWaitPerSliceMicros": wait_per_slice_us,
        "cpuMicrosPerMessage": cpu_ns / 1e3 / messages if messages else None,
        "hostBusy": share >= host.host_busy_share and wait_per_slice_us >= host.host_busy_wait_us,
    }
