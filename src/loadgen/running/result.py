"""What a run returns to Python callers: counts, rates and latencies of the measured phase.

Every latency is a :class:`Latency` over the run's aggregated HdrHistogram (warm-up excluded),
so ``result.e2e.p99_ms`` is the number the result JSON and the CLI report, and
``result.e2e.percentile(99.9)`` answers any other question the histogram can.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loadgen.base import hdr
from loadgen.base.files import write_json_atomic
from loadgen.engine.stats import (
    END_TO_END,
    END_TO_END_FROM_INTENDED,
    PUBLISH,
    PUBLISH_DELAY,
    PUBLISH_FROM_INTENDED,
    IntervalStats,
    measured_intervals,
    merge_all,
    sent_per_second,
)
from loadgen.report.console import count_text

TABLE_PERCENTILES = (50.0, 99.0, 99.9)


@dataclass(frozen=True)
class Latency:
    """One latency metric; ``histogram`` is in µs, every accessor answers in ms."""

    name: str
    histogram: hdr.Histogram = field(repr=False)

    @property
    def count(self) -> int:
        return self.histogram.total

    def percentile(self, percentile: float) -> float:
        """The value at ``percentile`` (0–100) in ms, as Java's getValueAtPercentile."""
        return hdr.value_at_percentile(self.histogram, percentile) / 1000

    @property
    def p50_ms(self) -> float:
        return self.percentile(50)

    @property
    def p99_ms(self) -> float:
        return self.percentile(99)

    @property
    def p999_ms(self) -> float:
        return self.percentile(99.9)

    @property
    def max_ms(self) -> float:
        return self.histogram.max / 1000

    @property
    def mean_ms(self) -> float:
        return hdr.mean(self.histogram) / 1000


@dataclass(frozen=True)
class Result:
    """One run's result, typed for the API and tests; ``document`` is the result document
    itself (the OMB TestResult JSON the CLI writes)."""

    workload: str
    driver: str
    sent: int
    received: int
    errors: int
    missing: int
    """Messages a subscription should have received but had not when the drain ended
    (sent × subscriptions − received, never negative)."""
    measured_seconds: float
    publish_rate: float
    """Messages sent per second over the measured phase (warm-up excluded)."""
    consume_rate: float
    publish: Latency
    publish_delay: Latency
    publish_from_intended: Latency
    e2e: Latency
    e2e_from_intended: Latency
    """Receive time − intended send time: the end-to-end latency corrected for coordinated
    omission (a stalled producer shows here, not in ``e2e``)."""
    duplicates: int | None
    """Messages a subscription received more than once (``None``: the run could not account,
    its messages carried no ids)."""
    lost: int | None
    """Messages the broker acknowledged that a subscription never received (``None`` also when
    the run ended before its drain)."""
    out_of_order: int | None
    """Deliveries with a lower sequence than one already delivered on their (consumer, producer,
    partition) stream."""
    incomplete: bool
    stop_reason: str | None
    phase_seconds: dict[str, float]
    document: dict[str, Any] = field(repr=False)

    @property
    def latencies(self) -> tuple[Latency, ...]:
        return (
            self.publish,
            self.publish_delay,
            self.publish_from_intended,
            self.e2e,
            self.e2e_from_intended,
        )

    def save(self, path: str | Path) -> Path:
        """Write the result JSON (the same document ``loadgen run`` writes) to ``path``."""
        target = Path(path)
        write_json_atomic(target, self.document)
        return target

    def table(self) -> str:
        """Counts, rates and the latency percentiles, as a fixed-width text table."""
        header = "".join(f"{'p' + format(p, 'g'):>10}" for p in TABLE_PERCENTILES)
        lines = [
            f"{self.workload} on {self.driver}: sent {self.sent:,}, received {self.received:,}, "
            f"errors {self.errors:,}, missing {self.missing:,}, lost {count_text(self.lost)}, "
            f"duplicated {count_text(self.duplicates)}, "
            f"out of order {count_text(self.out_of_order)}",
            f"publish rate {self.publish_rate:,.0f} msg/s, consume rate "
            f"{self.consume_rate:,.0f} msg/s over {self.measured_seconds:.1f} s"
            + (f" (incomplete: {self.stop_reason})" if self.incomplete else ""),
            f"{'latency (ms)':<24}{header}{'max':>10}{'count':>10}",
        ]
        for latency in self.latencies:
            values = "".join(f"{latency.percentile(p):>10.3f}" for p in TABLE_PERCENTILES)
            lines.append(f"{latency.name:<24}{values}{latency.max_ms:>10.3f}{latency.count:>10}")
        return "\n".join(lines)


def build_result(
    workload: str,
    driver: str,
    subscriptions: int,
    intervals: list[IntervalStats],
    document: dict[str, Any],
    phase_seconds: dict[str, float],
) -> Result:
    measured = measured_intervals(intervals)
    aggregate = merge_all(measured) if measured else None
    seconds = sum(s.seconds for s in measured)

    def latency(name: str, metric: str) -> Latency:
        histogram = aggregate.histogram(metric) if aggregate else hdr.histogram_for(metric)
        return Latency(name, histogram)

    sent, received = document["totalMessagesSent"], document["totalMessagesReceived"]
    return Result(
        workload=workload,
        driver=driver,
        sent=sent,
        received=received,
        errors=document["totalPublishErrors"],
        missing=max(0, sent * subscriptions - received),
        measured_seconds=seconds,
        publish_rate=sent_per_second(measured),
        consume_rate=aggregate.received / seconds if aggregate else 0.0,
        publish=latency("publish", PUBLISH),
        publish_delay=latency("publish delay", PUBLISH_DELAY),
        publish_from_intended=latency("publish from intended", PUBLISH_FROM_INTENDED),
        e2e=latency("end-to-end", END_TO_END),
        e2e_from_intended=latency("e2e from intended", END_TO_END_FROM_INTENDED),
        duplicates=document.get("totalDuplicates"),
        lost=document.get("totalLost"),
        out_of_order=document.get("totalOutOfOrder"),
        incomplete=document["incomplete"],
        stop_reason=document.get("stopReason"),
        phase_seconds=dict(phase_seconds),
        document=document,
    )
