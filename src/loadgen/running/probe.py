"""The ad-hoc latency probe: one URL in, live publish and end-to-end percentiles out.

A probe is a tiny tailing run (one topic, one partition, one producer, one consumer, 1-s stats
intervals, no warm-up) on the same engine as ``loadgen run``, so its numbers mean the same.
The URL picks the driver and its address (:mod:`loadgen.driver_api.urls`, shared with ``loadgen run
URL``);
without a driver file the settings are the driver's ``probe_defaults`` (latency-minded, for a
real cluster), and its ``probe_config`` adjusts any config (the Kafka consumer starts at the
topic's end).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from loadgen.base import hdr
from loadgen.base.errors import ConfigError
from loadgen.driver_api import driver_classes, load_driver_class, open_driver, urls
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.listeners import Listeners, OnInterval
from loadgen.engine.local_worker import LocalWorker
from loadgen.engine.outcome import RunOutcome
from loadgen.engine.payload import build_payloads
from loadgen.engine.stats import END_TO_END, PUBLISH, IntervalStats, merge_all
from loadgen.engine.stats import METRICS as RECORDED
from loadgen.formats.json_lines import latency_ms
from loadgen.formats.run_verdicts import consumers_verdict, rate_verdict
from loadgen.running import thresholds
from loadgen.running.lifecycle import run_workload
from loadgen.running.request import RunOptions
from loadgen.spec import Workload, parse_model

SOURCE = "<probe>"
METRICS = {"publish": PUBLISH, "e2e": END_TO_END}
"""``--metric`` names and the histogram each judges."""
PROBE_PERCENTILES = (50.0, 99.0)
"""What each per-second line shows besides the max; the summary adds p99.9."""


def driver_for_url(url: str, driver_file: Path | None = None) -> DriverSpec:
    """The driver config a probe of ``url`` uses; ``driver_file`` supplies client settings,
    over the driver's ``probe_defaults``, and the driver's ``probe_config`` has the last word."""
    spec = urls.driver_for_url(url, driver_file, lambda driver: driver.probe_defaults)
    return replace(spec, config=load_driver_class(spec).probe_config(spec.config))


@dataclass(frozen=True)
class ProbeSettings:
    """What to send and what counts as a breach (thresholds in ms, ``None`` = not judged)."""

    rate: float = 100.0
    duration_s: float = 10.0
    message_size: int = 1024
    metric: str = "e2e"
    max_p50_ms: float | None = None
    max_p99_ms: float | None = None
    topic: str | None = None
    """Probe this topic (created if absent, kept afterwards) instead of a temporary one."""
    slo: tuple[thresholds.Threshold, ...] = ()
    """Thresholds in ``--slo``'s language, judged besides ``max_p50_ms``/``max_p99_ms``."""

    def all_thresholds(self) -> tuple[thresholds.Threshold, ...]:
        """Every threshold: ``--max-p50``/``--max-p99`` on ``metric`` first, then ``slo``."""
        limits = (("p50", self.max_p50_ms), ("p99", self.max_p99_ms))
        texts = [
            f"{self.metric}.{stat}<={bound!r}ms" for stat, bound in limits if bound is not None
        ]
        return thresholds.parse_all(texts, option="--max-p50/--max-p99") + self.slo


@dataclass(frozen=True)
class Verdict:
    """The probe's outcome over everything it measured."""

    sent: int
    received: int
    errors: int
    publish: hdr.Histogram
    e2e: hdr.Histogram
    breaches: list[str]
    stopped: str | None
    """Why the probe ended early (``interrupted``, ``error: ...``), ``None`` when it ran out."""

    @property
    def failed(self) -> bool:
        """A breached threshold, or a broker error mid-probe (Ctrl-C alone is not a failure)."""
        return bool(self.breaches) or self.stopped not in (None, "interrupted")


def probe_workload(settings: ProbeSettings) -> Workload:
    fields = {
        "name": "probe",
        "topics": 1,
        "partitionsPerTopic": 1,
        "messageSize": settings.message_size,
        "subscriptionsPerTopic": 1,
        "consumerPerSubscription": 1,
        "producersPerTopic": 1,
        "producerRate": settings.rate,
        "testDurationMinutes": settings.duration_s / 60,
        "warmupDurationMinutes": 0,
    }
    return parse_model(Workload, fields, file=SOURCE)


def run_probe(
    spec: DriverSpec, settings: ProbeSettings, on_interval: Callable[[IntervalStats], None]
) -> Verdict:
    """Probe the broker of ``spec``; Ctrl-C ends it early with a verdict on what was measured."""
    if settings.topic and not load_driver_class(spec).probe_named_topics:
        # elsewhere the probe's subscription (a queue, a subscription) would outlive it
        able = [kind for kind, driver in driver_classes().items() if driver.probe_named_topics]
        raise ConfigError(
            f"a named topic can be probed on {', '.join(able)} only",
            path="--topic",
            value=settings.topic,
            allowed=[f"{kind}:// URLs" for kind in able],
        )
    workload = probe_workload(settings)
    options = RunOptions(
        stats_interval_s=1.0,
        reachable_timeout_s=3.0,
        probe_timeout_s=10.0,
        drain_timeout_s=2.0,
        topic_names=(settings.topic,) if settings.topic else (),
    )
    shown = Listeners((OnInterval(lambda stats, _backlog: on_interval(stats)),))
    outcome = run_workload(
        LocalWorker(open_driver(spec)), workload, build_payloads(workload, None), options, shown
    )
    return _verdict(outcome, settings)


def _verdict(outcome: RunOutcome, settings: ProbeSettings) -> Verdict:
    merged = merge_all(outcome.intervals) if outcome.intervals else None
    histograms = {
        metric: merged.histogram(metric) if merged else hdr.histogram_for(metric)
        for metric in RECORDED
    }
    sent = sum(s.sent for s in outcome.intervals)
    received = sum(s.received for s in outcome.intervals)
    errors = sum(s.send_errors for s in outcome.intervals)
    seconds = sum(s.seconds for s in outcome.intervals) or None
    counts = {
        "rate": sent / seconds / settings.rate if seconds else None,
        "publishRate": sent / seconds if seconds else None,
        "consumeRate": received / seconds if seconds else None,
        "errors": errors,
    }
    verdicts = {
        "rate": rate_verdict(settings.rate, outcome.intervals, producers=1),
        "consumers": consumers_verdict(outcome, 1, 1, delivered_rate=counts["publishRate"] or 0),
    }
    counts |= thresholds.verdict_counts(verdicts)
    checks = thresholds.judge(settings.all_thresholds(), thresholds.Figures(histograms, counts))
    breaches = [check.describe() for check in checks if not check.passed]
    stopped = None
    if outcome.incomplete:
        stopped = outcome.stop_reason or "error"
        if outcome.stop_reason != "interrupted":
            stopped = f"{stopped}: {outcome.stop_detail}"
    return Verdict(
        sent=sent,
        received=received,
        errors=errors,
        publish=histograms[PUBLISH],
        e2e=histograms[END_TO_END],
        breaches=breaches,
        stopped=stopped,
    )


def second_record(stats: IntervalStats, elapsed_s: float) -> dict[str, Any]:
    """One interval as the probe reports it (``--json`` prints exactly this)."""
    return {
        "elapsed_s": round(elapsed_s, 3),
        "sent_per_s": round(stats.sent / stats.seconds, 1),
        "received_per_s": round(stats.received / stats.seconds, 1),
        "errors": stats.send_errors,
        "publish_ms": latency_ms(stats.histogram(PUBLISH), PROBE_PERCENTILES),
        "e2e_ms": latency_ms(stats.histogram(END_TO_END), PROBE_PERCENTILES),
    }


def _shown(points: Mapping[str, float | None]) -> str:
    return " ".join(
        f"{name} {'-' if value is None else f'{value:.3f}'}" for name, value in points.items()
    )


def format_interval(record: Mapping[str, Any]) -> str:
    return (
        f"{record['elapsed_s']:6.1f}s  sent {record['sent_per_s']:7.0f}/s"
        f"  recv {record['received_per_s']:7.0f}/s  err {record['errors']}"
        f"  | publish ms {_shown(record['publish_ms'])}"
        f"  | e2e ms {_shown(record['e2e_ms'])}"
    )


def verdict_record(verdict: Verdict) -> dict[str, Any]:
    return {
        "summary": True,
        "sent": verdict.sent,
        "received": verdict.received,
        "errors": verdict.errors,
        "publish_ms": latency_ms(verdict.publish),
        "e2e_ms": latency_ms(verdict.e2e),
        "breaches": verdict.breaches,
        "stopped": verdict.stopped,
    }


def format_verdict(verdict: Verdict) -> str:
    record = verdict_record(verdict)
    lines = [
        f"probe: sent {verdict.sent}, received {verdict.received}, errors {verdict.errors}",
        f"  publish ms {_shown(record['publish_ms'])}",
        f"  e2e ms     {_shown(record['e2e_ms'])}",
    ]
    if verdict.stopped:
        lines.append(f"  stopped early: {verdict.stopped}")
    lines += [f"  BREACH {breach}" for breach in verdict.breaches]
    return "\n".join(lines)


def as_json_line(record: Mapping[str, Any]) -> str:
    return json.dumps(record, separators=(",", ":"))
