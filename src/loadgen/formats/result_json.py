"""The result document: OMB's ``TestResult`` JSON, field for field, then loadgen's additions.

Units follow OMB exactly: publish and end-to-end latencies in ms (floats), publish delay in µs
(integer percentiles, float average). Per-period lists cover the measured phase only; the
``backlog`` list uses running totals over the whole run, warm-up and probe included (OMB).
Everything is derived from the interval histograms, which are also written (base64 V2) so any
number here can be recomputed.

The runner and the journal reader (:mod:`loadgen.formats.journal`) both build the document
through :func:`result_document`, from a :class:`RunStart` (what is fixed when the run starts)
and an outcome, so a result rebuilt from a journal cannot drift from the one a run writes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from loadgen.base import hdr
from loadgen.engine.accounting import Accounting
from loadgen.engine.outcome import RunOutcome
from loadgen.engine.stats import (
    END_TO_END,
    END_TO_END_FROM_INTENDED,
    END_TO_END_UNCORRECTED,
    PUBLISH,
    PUBLISH_DELAY,
    PUBLISH_FROM_INTENDED,
    IntervalStats,
    measured_intervals,
    merge_all,
    recorded_metrics,
    running_backlogs,
)
from loadgen.formats.catch_up import catch_up_fields, role_histograms
from loadgen.formats.client_cpu import client_cpu_fields
from loadgen.formats.faults import fault_fields, faults_verdict
from loadgen.formats.run_verdicts import asked_rate, verdict_fields
from loadgen.formats.transactions import transaction_fields

SUFFIXES = ("Avg", "50pct", "75pct", "95pct", "99pct", "999pct", "9999pct", "Max")
PERCENTILES = (50.0, 75.0, 95.0, 99.0, 99.9, 99.99)


@dataclass(frozen=True)
class ResultHeader:
    workload: str
    driver: str
    message_size: int
    topics: int
    partitions: int
    producers_per_topic: int
    consumers_per_topic: int
    subscriptions_per_topic: int
    tailing_subscriptions_per_topic: int = 0
    """A mixed run's subscriptions that never pause (the catch-up fields split on it)."""


def _ms(micros: float) -> float:
    return micros / 1000.0


def _as_is(micros: float) -> float:
    return micros


def latency_fields(
    histogram: hdr.Histogram, convert: Callable[[float], float], integer_percentiles: bool = False
) -> list[Any]:
    """[avg, p50, p75, p95, p99, p99.9, p99.99, max] in OMB's unit for the metric."""
    values: list[Any] = [convert(hdr.mean(histogram))]
    points = [hdr.value_at_percentile(histogram, p) for p in PERCENTILES] + [histogram.max]
    values += [int(v) if integer_percentiles else convert(v) for v in points]
    return values


def _quantiles(histogram: hdr.Histogram, convert: Callable[[float], float]) -> dict[str, Any]:
    return {key: convert(value) for key, value in hdr.quantile_map(histogram).items()}


def _period_lists(
    name: str,
    histograms: Sequence[hdr.Histogram],
    convert: Callable[[float], float],
    integer_percentiles: bool = False,
) -> dict[str, list[Any]]:
    rows = [latency_fields(h, convert, integer_percentiles) for h in histograms]
    return {f"{name}{suffix}": [row[i] for row in rows] for i, suffix in enumerate(SUFFIXES)}


def _aggregated(
    name: str,
    histogram: hdr.Histogram,
    convert: Callable[[float], float],
    integer_percentiles: bool = False,
) -> dict[str, Any]:
    row = latency_fields(histogram, convert, integer_percentiles)
    return {f"aggregated{name}{suffix}": value for suffix, value in zip(SUFFIXES, row, strict=True)}


def _delivery_fields(
    accounting: Accounting | None, measured: Sequence[IntervalStats]
) -> dict[str, Any]:
    """Whole-run duplicate, loss and reorder counts, their breakdown, and per-period counts."""
    return {
        "totalDuplicates": accounting.duplicates if accounting else None,
        "totalLost": accounting.lost if accounting else None,
        "totalOutOfOrder": accounting.out_of_order if accounting else None,
        "lossDetected": accounting.loss_detected if accounting else None,
        "deliveryAccounting": accounting.subscriptions if accounting else None,
        "totalUnread": accounting.unread if accounting else None,
        "totalAbortedRead": accounting.aborted_read if accounting else None,
        "duplicates": [s.duplicates for s in measured],
        "outOfOrder": [s.out_of_order for s in measured],
    }


def build_test_result(
    header: ResultHeader, outcome: RunOutcome, run: dict[str, Any]
) -> dict[str, Any]:
    """The result document of ``outcome``, finished, cut short or still going; ``run`` is its
    ``run`` block (:mod:`loadgen.formats.metadata`).

    The outcome's intervals are all of them, warm-up flagged; its ``extensions`` are a
    scenario's own fields (``rateDiscovery``...), added before ``run``; its ``accounting``
    ``None`` (the run could not account) makes the counts ``null``, not 0."""
    intervals = outcome.intervals
    measured = measured_intervals(intervals)
    aggregate = merge_all(measured) if measured else None

    def period(metric: str) -> list[hdr.Histogram]:
        return [s.histogram(metric) for s in measured]

    def whole(metric: str) -> hdr.Histogram:
        return aggregate.histogram(metric) if aggregate else hdr.histogram_for(metric)

    result: dict[str, Any] = {
        "workload": header.workload,
        "driver": header.driver,
        "messageSize": header.message_size,
        "topics": header.topics,
        "partitions": header.partitions,
        "producersPerTopic": header.producers_per_topic,
        "consumersPerTopic": header.consumers_per_topic,
        "publishRate": [s.sent / s.seconds for s in measured],
        "publishErrorRate": [s.send_errors / s.seconds for s in measured],
        "consumeRate": [s.received / s.seconds for s in measured],
        "backlog": [
            backlog
            for stats, backlog in zip(
                intervals, running_backlogs(intervals, header.subscriptions_per_topic), strict=True
            )
            if not stats.warmup
        ],
    }
    result |= _period_lists("publishLatency", period(PUBLISH), _ms)
    result |= _period_lists("publishDelayLatency", period(PUBLISH_DELAY), _as_is, True)
    result |= _aggregated("PublishLatency", whole(PUBLISH), _ms)
    result |= _aggregated("PublishDelayLatency", whole(PUBLISH_DELAY), _as_is, True)
    result["aggregatedPublishLatencyQuantiles"] = _quantiles(whole(PUBLISH), _ms)
    result["aggregatedPublishDelayLatencyQuantiles"] = _quantiles(whole(PUBLISH_DELAY), int)
    result |= _period_lists("endToEndLatency", period(END_TO_END), _ms)
    result["aggregatedEndToEndLatencyQuantiles"] = _quantiles(whole(END_TO_END), _ms)
    result |= _aggregated("EndToEndLatency", whole(END_TO_END), _ms)
    # loadgen's additions, after every OMB field
    result |= {
        "totalMessagesSent": outcome.totals.probe_sent + sum(s.sent for s in intervals),
        "totalMessagesReceived": outcome.totals.probe_received + sum(s.received for s in intervals),
        "totalPublishErrors": sum(s.send_errors for s in intervals),
        "negativeEndToEnd": sum(s.negative_e2e for s in intervals),
    }
    result |= _aggregated("PublishFromIntendedLatency", whole(PUBLISH_FROM_INTENDED), _ms)
    result |= _aggregated("EndToEndFromIntendedLatency", whole(END_TO_END_FROM_INTENDED), _ms)
    metrics = recorded_metrics(intervals)
    if END_TO_END_UNCORRECTED in metrics:  # the workers' clock offsets corrected endToEnd
        uncorrected = whole(END_TO_END_UNCORRECTED)
        result |= _aggregated("EndToEndLatencyUncorrected", uncorrected, _ms)
        result["negativeEndToEndUncorrected"] = sum(s.negative_e2e_uncorrected for s in intervals)
    result |= _delivery_fields(outcome.accounting, measured)
    result["histograms"] = {
        metric: {
            "aggregated": hdr.encode(whole(metric)),
            "periods": [hdr.encode(h) for h in period(metric)],
        }
        for metric in metrics
    }
    transactions = transaction_fields(
        intervals, outcome.accounting.aborted_read if outcome.accounting else None
    )
    if transactions is not None:
        result["transactions"] = transactions
    if outcome.catch_up is not None:
        result["histograms"] |= role_histograms(intervals)
        tailing = header.tailing_subscriptions_per_topic
        result["catchUp"] = catch_up_fields(outcome.catch_up, intervals, tailing)
        result["catchUp"]["unreadMessages"] = result["totalUnread"]
    workload = run.get("workload", {})
    extensions = dict(outcome.extensions)
    if "faults" in extensions:
        extensions["faults"] = fault_fields(
            extensions["faults"], intervals, asked_rate(workload), outcome.accounting
        )
    result["verdicts"] = verdict_fields(
        outcome,
        measured,
        workload,
        header.topics * header.producers_per_topic,
        header.subscriptions_per_topic,
        faults_verdict(extensions["faults"]) if extensions.get("faults") else None,
    )
    client_cpu = client_cpu_fields(measured)
    if client_cpu is not None:
        result["clientCpu"] = client_cpu
    result["incomplete"] = outcome.incomplete
    if outcome.incomplete:
        result["stopReason"] = outcome.stop_reason or "error"
    result |= extensions
    result["run"] = run
    return result


UNFINISHED = "unfinished"
UNFINISHED_DETAIL = (
    "rebuilt from the run's journal, written after every interval while the run was going; the "
    "process ended before the run did (killed or crashed), so this holds the intervals "
    "completed until then"
)


@dataclass(frozen=True)
class RunStart:
    """Everything of a result but its intervals and what the run's end tells: a journal's first
    record, JSON-ready (``options`` and ``placement`` as the result's ``run`` block shows them)."""

    header: ResultHeader
    run_id: str
    started_ms: int
    setup: dict[str, Any]
    options: dict[str, Any]
    placement: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "header": asdict(self.header),
            "runId": self.run_id,
            "startedMs": self.started_ms,
            "setup": self.setup,
            "options": self.options,
            "placement": self.placement,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunStart:
        return cls(
            ResultHeader(**data["header"]),
            data["runId"],
            data["startedMs"],
            data["setup"],
            data["options"],
            data["placement"],
        )


def result_document(start: RunStart, outcome: RunOutcome) -> dict[str, Any]:
    """The TestResult document of ``outcome`` (finished, cut short or still going)."""
    return build_test_result(start.header, outcome, run_metadata(start, outcome))


def unfinished_outcome(start: RunStart, intervals: list[IntervalStats]) -> RunOutcome:
    """What a run that never ended measured: its completed ``intervals``, nothing of its end."""
    return RunOutcome(
        intervals=intervals,
        started_ms=start.started_ms,
        ended_ms=intervals[-1].end_ms if intervals else start.started_ms,
        incomplete=True,
        stop_reason=UNFINISHED,
        stop_detail=UNFINISHED_DETAIL,
    )


def run_metadata(start: RunStart, outcome: RunOutcome) -> dict[str, Any]:
    """The ``run`` block of the result: id, configuration, config echo, drain and clock facts.

    The start's ``setup`` is the run's :func:`configuration`, taken once when it started (the
    landing files carry the same); the workers, their clock offsets and roles come from the
    outcome (the worker that ran it).
    """
    return {
        "runId": start.run_id,
        **start.setup,
        "startedAt": datetime.fromtimestamp(outcome.started_ms / 1000, UTC).isoformat(),
        "endedAt": datetime.fromtimestamp(outcome.ended_ms / 1000, UTC).isoformat(),
        "options": start.options,
        "topics": outcome.topics,
        "drain": {
            "seconds": round(outcome.drain_seconds, 3),
            "unacknowledged": outcome.pending_acks,
            "undelivered": outcome.undelivered,
        },
        "phaseSeconds": {phase: round(t, 3) for phase, t in outcome.phase_seconds.items()},
        "stopDetail": outcome.stop_detail or None,
        "placement": start.placement,
        **outcome.placement,
    }
