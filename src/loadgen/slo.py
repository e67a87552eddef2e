"""Service-level checks on a :class:`~loadgen.result.Result`, for tests.

``assert_slo(result, e2e_p99_ms=5, min_rate=9_900)`` raises an AssertionError that lists every
missed limit and then the run's percentile table, so a failing test says what happened without
a debugger. Errors, missing, lost and duplicated messages fail by default: a latency from a
lossy run is no pass (a run that could not account, ``lost is None``, is judged on missing only).
"""

from __future__ import annotations

from loadgen.result import Latency, Result


def assert_slo(
    result: Result,
    *,
    e2e_p50_ms: float | None = None,
    e2e_p99_ms: float | None = None,
    e2e_p999_ms: float | None = None,
    e2e_max_ms: float | None = None,
    publish_p50_ms: float | None = None,
    publish_p99_ms: float | None = None,
    publish_p999_ms: float | None = None,
    publish_from_intended_p99_ms: float | None = None,
    e2e_from_intended_p99_ms: float | None = None,
    min_rate: float | None = None,
    max_errors: int = 0,
    max_missing: int = 0,
    max_lost: int = 0,
    max_duplicates: int = 0,
) -> None:
    """Fail with every missed limit and the percentile table; pass silently otherwise."""
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's
    ceilings: list[tuple[str, float | None, Latency, float | None]] = [
        ("e2e p50", e2e_p50_ms, result.e2e, 50),
        ("e2e p99", e2e_p99_ms, result.e2e, 99),
        ("e2e p99.9", e2e_p999_ms, result.e2e, 99.9),
        ("e2e max", e2e_max_ms, result.e2e, None),
        ("publish p50", publish_p50_ms, result.publish, 50),
        ("publish p99", publish_p99_ms, result.publish, 99),
        ("publish p99.9", publish_p999_ms, result.publish, 99.9),
        (
            "publish from intended p99",
            publish_from_intended_p99_ms,
            result.publish_from_intended,
            99,
        ),
        ("e2e from intended p99", e2e_from_intended_p99_ms, result.e2e_from_intended, 99),
    ]
    missed = []
    for label, limit, latency, percentile in ceilings:
        if limit is None:
            continue
        if latency.count == 0:
            missed.append(f"{label}: nothing was measured (limit {limit:g} ms)")
            continue
        value = latency.max_ms if percentile is None else latency.percentile(percentile)
        if value > limit:
            missed.append(f"{label} {value:.3f} ms > {limit:g} ms")
    if min_rate is not None and result.publish_rate < min_rate:
        missed.append(f"publish rate {result.publish_rate:,.0f} msg/s < {min_rate:,.0f} msg/s")
    if result.errors > max_errors:
        missed.append(f"{result.errors:,} send errors > {max_errors:,} allowed")
    if result.missing > max_missing:
        missed.append(f"{result.missing:,} messages never received > {max_missing:,} allowed")
    if result.lost is not None and result.lost > max_lost:
        missed.append(f"{result.lost:,} messages lost > {max_lost:,} allowed")
    if result.duplicates is not None and result.duplicates > max_duplicates:
        missed.append(f"{result.duplicates:,} messages duplicated > {max_duplicates:,} allowed")
    if result.incomplete:
        missed.append(f"the run did not complete: {result.stop_reason}")
    if missed:
        raise AssertionError("SLO missed:\n  " + "\n  ".join(missed) + "\n" + result.table())
