"""What a scrape shows: Prometheus metric families built from one immutable :class:`View`.

Names follow OMB's worker export (``benchmark_producer_messages_sent``...) with a ``loadgen_``
prefix and Prometheus conventions: ``_total`` counters, latencies in ``_seconds``. Every figure
comes from interval snapshots (never from the per-message path), and every percentile is
Java's ``getValueAtPercentile`` (:func:`loadgen.base.hdr.value_at_percentile`) on the interval's
histogram, so a scrape agrees digit for digit with the result file's period lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from loadgen.base import hdr
from loadgen.engine.stats import END_TO_END, PUBLISH, PUBLISH_DELAY, IntervalStats

PHASES = ("idle", "setup", "warmup", "catch-up", "measure", "load", "drain", "teardown")
"""Every phase a run or a worker reports (:class:`loadgen.engine.listeners.RunListener`'s
``on_phase``)."""
QUANTILES = (("0.5", 50.0), ("0.95", 95.0), ("0.99", 99.0), ("0.999", 99.9), ("1", 100.0))
"""``quantile`` label → Java percentile; quantile 1 is the interval's maximum."""
LATENCIES = (
    (PUBLISH, "loadgen_producer_publish_latency_seconds", "publish latency (ack − send)"),
    (PUBLISH_DELAY, "loadgen_producer_publish_delay_seconds", "publish delay (send − intended)"),
    (END_TO_END, "loadgen_consumer_e2e_latency_seconds", "end-to-end latency (receive − send)"),
)
MICROS = 1e6


@dataclass(frozen=True)
class RunningTotals:
    """Sums over every interval of the run so far, warm-up included (probe messages are not)."""

    sent: int = 0
    send_errors: int = 0
    bytes_sent: int = 0
    received: int = 0
    bytes_received: int = 0

    def plus(self, stats: IntervalStats) -> RunningTotals:
        return RunningTotals(
            self.sent + stats.sent,
            self.send_errors + stats.send_errors,
            self.bytes_sent + stats.bytes_sent,
            self.received + stats.received,
            self.bytes_received + stats.bytes_received,
        )


@dataclass(frozen=True)
class View:
    """Everything one scrape reports; replaced whole, never changed."""

    labels: Mapping[str, str] = field(default_factory=dict)
    active: bool = False
    phase: str = "idle"
    totals: RunningTotals = RunningTotals()
    interval: IntervalStats | None = None
    index: int = -1
    """The interval's position among the run's intervals (0-based, warm-up included)."""
    backlog: int | None = None
    """Messages sent but not yet received at the interval's end; ``None`` where unknown."""


class _Families:
    """Builds families that all carry the view's labels (plus their own)."""

    def __init__(self, labels: Mapping[str, str]) -> None:
        self.names = list(labels)
        self.values = list(labels.values())
        self.built: list[Metric] = []

    def add(
        self,
        kind: type[GaugeMetricFamily] | type[CounterMetricFamily],
        name: str,
        documentation: str,
        samples: list[tuple[dict[str, str], float]],
    ) -> None:
        extra = list(samples[0][0]) if samples else []
        family = kind(name, documentation, labels=[*self.names, *extra])
        for own, value in samples:
            family.add_metric([*self.values, *own.values()], value)
        self.built.append(family)

    def gauge(self, name: str, documentation: str, value: float) -> None:
        self.add(GaugeMetricFamily, name, documentation, [({}, value)])

    def counter(self, name: str, documentation: str, value: float) -> None:
        self.add(CounterMetricFamily, name, documentation, [({}, value)])


def families(view: View) -> list[Metric]:
    """The families of one scrape of ``view``."""
    out = _Families(view.labels)
    out.gauge("loadgen_run_active", "1 while a run is in progress, 0 when idle", float(view.active))
    phases = PHASES if view.phase in PHASES else (*PHASES, view.phase)
    out.add(
        GaugeMetricFamily,
        "loadgen_run_phase",
        "1 for the phase the run is in, 0 for the others",
        [({"phase": phase}, float(phase == view.phase)) for phase in phases],
    )
    totals = view.totals
    out.counter("loadgen_producer_messages_sent", "messages sent and acknowledged", totals.sent)
    out.counter("loadgen_producer_message_send_errors", "failed sends", totals.send_errors)
    out.counter("loadgen_producer_bytes_sent", "payload bytes sent", totals.bytes_sent)
    out.counter("loadgen_consumer_messages_recv", "messages received", totals.received)
    out.counter("loadgen_consumer_bytes_recv", "payload bytes received", totals.bytes_received)
    if view.backlog is not None:
        out.gauge("loadgen_consumer_backlog_messages", "sent, not yet received", view.backlog)
    if view.interval is not None:
        _interval(out, view.interval, view.index)
    return out.built


def _interval(out: _Families, stats: IntervalStats, index: int) -> None:
    """The last completed interval: its identity, counts, rates and latency percentiles."""
    out.gauge("loadgen_interval_index", "position among the run's intervals (0-based)", index)
    out.gauge("loadgen_interval_start_timestamp_seconds", "interval start", stats.start_ms / 1e3)
    out.gauge("loadgen_interval_end_timestamp_seconds", "interval end", stats.end_ms / 1e3)
    out.gauge(
        "loadgen_interval_warmup", "1 if the interval was in the warm-up", float(stats.warmup)
    )
    counts = (
        ("producer_messages_sent", "messages sent", stats.sent),
        ("producer_message_send_errors", "failed sends", stats.send_errors),
        ("producer_bytes_sent", "payload bytes sent", stats.bytes_sent),
        ("consumer_messages_recv", "messages received", stats.received),
        ("consumer_bytes_recv", "payload bytes received", stats.bytes_received),
    )
    for name, what, count in counts:
        out.gauge(f"loadgen_interval_{name}", f"{what} in the interval", count)
        out.gauge(
            f"loadgen_interval_{name}_per_second", f"{what} per second", count / stats.seconds
        )
    out.add(
        GaugeMetricFamily,
        "loadgen_interval_latency_values",
        "values in the interval's latency histogram",
        [({"metric": metric}, stats.histogram(metric).total) for metric, _, _ in LATENCIES],
    )
    for metric, name, what in LATENCIES:
        histogram = stats.histogram(metric)
        out.add(
            GaugeMetricFamily,
            name,
            f"the interval's {what}; Java HdrHistogram percentiles, quantile 1 is the maximum",
            [
                ({"quantile": label}, hdr.value_at_percentile(histogram, p) / MICROS)
                for label, p in QUANTILES
            ],
        )
