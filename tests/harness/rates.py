"""Judging a rate a test measured: held, or not judged because the host was too busy.

A rate a run holds on a host that gives it the CPU is the product's promise; on a host where
other processes take the cores, the client falls behind and the shortfall measures the host. The
run itself tells the two apart (its ``clientCpu`` block, :mod:`loadgen.base.cpu_use`), so a test
holds
the product to its rate unless the run says its host was busy, and then skips, naming how busy.
"""

from __future__ import annotations

from typing import Any

import pytest


def judge_rate(result: dict[str, Any], achieved: float, asked: float, rel: float) -> None:
    """Pass when ``achieved`` (a rate, or a count over the same span) is within ``rel`` of
    ``asked``; skip the test when it is not and
    ``result`` says the host was busy; fail otherwise (short on a host that gave it the CPU)."""
    if achieved == pytest.approx(asked, rel=rel):
        return
    skip_if_host_busy(result, f"{achieved:,.0f} for {asked:,.0f} asked")
    raise AssertionError(
        f"{achieved:,.0f} for {asked:,.0f} asked (+/-{rel:.0%}), on a host that was not busy: "
        f"clientCpu {result.get('clientCpu')}"
    )


def skip_if_host_busy(result: dict[str, Any], what: str) -> None:
    """Skip the test, naming ``what`` could not be judged, when ``result`` says its host was
    busy; return otherwise."""
    block = result.get("clientCpu")
    if block and block["hostBusy"]:
        pytest.skip(
            f"{what}: not judged, the host was busy (loadgen's threads waited for a CPU "
            f"{block['runQueueWaitShare']:.0%} of the time they could run, "
            f"{block['runQueueWaitPerSliceMicros']:,.0f} µs a wait)"
        )
