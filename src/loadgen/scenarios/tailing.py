"""OMB's run lifecycle, which every scenario shares.

create topics → create consumers → create producers → probe that every subscription receives →
warm-up → [catch-up: build and drain a backlog] → measure → stop producers → drain in-flight
messages → tear down. Without producers (consumer-only) there is no probe and no load; a rate
control (discovery, a profile) adjusts the rate on the measurement's ticks.

Warm-up intervals are kept (flagged) so the totals stay exact; the result builder leaves them
out of the aggregates. Ctrl-C (or SIGTERM, turned into KeyboardInterrupt by the CLI) at any point
ends the run early with what was measured, marked incomplete; teardown always runs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from loadgen.accounting import Accounting, account
from loadgen.errors import ConfigError, DriverError, LoadgenError
from loadgen.scenarios.catch_up import CHECK_S, CatchUpOutcome, CatchUpPlan, build_and_drain
from loadgen.scenarios.outages import OutageWatch, threshold_for
from loadgen.scenarios.rate_control import RateControl, rate_control_for
from loadgen.spec import Workload
from loadgen.spec.consumer_delay import delay_pool
from loadgen.spill import Spill
from loadgen.stats import IntervalStats, merge_all
from loadgen.worker.contract import Worker
from loadgen.worker.local import Totals
from loadgen.worker.plan import catch_up_subscriptions, consumer_subscriptions, producer_topics

if TYPE_CHECKING:
    from loadgen.metrics.board import MetricsBoard

log = logging.getLogger("loadgen.run")

IntervalCallback = Callable[[IntervalStats, int], None]
"""Called after every interval with its snapshot and the backlog (messages) at its end."""
SETTLE_S = 0.05
CUT_SHORT_FLUSH_S = 1.0
"""How long a run cut short waits for the acknowledgements of messages in flight."""
INTERRUPTED_TEARDOWN_S = 1.5
"""How long teardown may take after Ctrl-C/SIGTERM before the run ends without it: with the
flush above and writing the result, the process ends within 5 s of the signal."""
SILENT_BROKER_TEARDOWN_S = 5.0
"""How long teardown may take when the broker had stopped acknowledging at the end of the run:
deleting topics on a broker that does not answer waits out the driver's admin timeout (30 s on
Kafka) for nothing."""
PhaseCallback = Callable[[str, float | None], None]
"""Called as each phase begins (``setup``, ``warmup``, ``measure``, ``drain``, ``teardown``)
with its planned length in seconds, or ``None`` when it lasts as long as it takes."""


@dataclass(frozen=True)
class RunOptions:
    """How to run a workload; ``None`` durations mean "as the workload says"."""

    duration_s: float | None = None
    warmup_s: float | None = None
    stats_interval_s: float = 10.0
    keep_topics: bool = False
    topic_names: tuple[str, ...] = ()
    """Use these topics (created if absent, never deleted) instead of fresh random ones."""
    probe_timeout_s: float = 60.0
    reachable_timeout_s: float = 10.0
    drain_timeout_s: float = 10.0
    catch_up_timeout_s: float = 600.0
    """Longest a catch-up run builds its backlog, and then longest it drains it."""
    pipeline_dir: str | None = None
    """Land every interval for the Spark pipeline here (:mod:`loadgen.pipeline.landing`)."""
    on_interval: IntervalCallback | None = None
    on_phase: PhaseCallback | None = None
    metrics: MetricsBoard | None = None
    """Publish every interval and phase here, for a Prometheus endpoint (:mod:`loadgen.metrics`)."""
    started_ms: int | None = None
    """When the run counts as started (epoch ms; now by default): names its result file."""

    def begin(self, phase: str, seconds: float | None = None) -> None:
        if self.on_phase is not None:
            self.on_phase(phase, seconds)


@dataclass
class RunOutcome:
    """Everything measured in one run, complete or not."""

    intervals: list[IntervalStats] = field(default_factory=list)
    totals: Totals = field(default_factory=Totals)
    topics: list[str] = field(default_factory=list)
    started_ms: int = 0
    ended_ms: int = 0
    incomplete: bool = False
    stop_reason: str | None = None
    stop_detail: str = ""
    pending_acks: int = 0
    drain_seconds: float = 0.0
    undelivered: int = 0
    phase_seconds: dict[str, float] = field(default_factory=dict)
    """Wall time of each lifecycle phase that ran (``topics``, ``probe``, ``measure``...)."""
    placement: dict[str, Any] = field(default_factory=dict)
    """Where it ran (:meth:`loadgen.worker.contract.Worker.placement`)."""
    worker_intervals: dict[str, list[IntervalStats]] = field(default_factory=dict)
    """Each worker's snapshots, when the run was split over workers."""
    accounting: Accounting | None = None
    """Duplicates, reorders and losses (:mod:`loadgen.accounting`); ``None`` when the run
    could not account (a message without an id, or the ranges could not be collected)."""
    catch_up: CatchUpOutcome | None = None
    """The backlog phases of a catch-up or mixed run."""
    extensions: dict[str, Any] = field(default_factory=dict)
    """Result fields a scenario part adds (``rateDiscovery``, ``rateProfile``)."""


class _PhaseClock:
    """Charges the time since the previous mark to the phase that just ended."""

    def __init__(self, into: dict[str, float]) -> None:
        self._into = into
        self._last = time.monotonic()

    def mark(self, phase: str) -> None:
        now = time.monotonic()
        self._into[phase] = self._into.get(phase, 0.0) + now - self._last
        self._last = now


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class _Measurement:
    """Ticks the stats interval and collects snapshots (the worker's single stats reader)."""

    def __init__(
        self,
        worker: Worker,
        workload: Workload,
        options: RunOptions,
        rate_control: RateControl | None = None,
    ) -> None:
        self.worker = worker
        self.subscriptions = workload.subscriptions_per_topic
        self.options = options
        self.rate_control = rate_control
        self.intervals: list[IntervalStats] = []
        self.spill = Spill()
        self.interval_start_ms = _now_ms()
        self.outages: OutageWatch | None = None
        """Set once the load starts; consumer-only runs have nothing to watch."""
        self.consuming = True
        """False while catch-up consumers are paused on purpose (not an outage)."""
        self.publishing = True
        """False once producers stopped with nothing left to acknowledge: no acks is no outage."""

    def watch_outages(self, rate: float) -> None:
        self.outages = OutageWatch(threshold_for(rate), self.subscriptions, _now_ms())

    def look_for_outages(self) -> None:
        if self.outages is not None:
            progress = self.worker.progress()
            self.outages.observe(
                _now_ms(), progress, consuming=self.consuming, publishing=self.publishing
            )

    def backlog(self) -> int:
        totals = self.worker.totals
        return max(0, self.subscriptions * totals.sent - totals.received)

    def take(self, *, warmup: bool) -> None:
        end_ms = _now_ms()
        stats = self.worker.snapshot(self.interval_start_ms, end_ms, warmup=warmup)
        self.interval_start_ms = end_ms
        kept = self.spill.keep(stats)  # the one copy: a checkpoint keeps this object too
        self.intervals.append(kept)
        if self.options.on_interval is not None:
            self.options.on_interval(kept, self.backlog())

    def run_phase(self, seconds: float, *, warmup: bool) -> None:
        """Snapshot on an absolute tick every stats interval until ``seconds`` have passed."""
        start = time.monotonic()
        end = start + seconds
        if self.rate_control is not None:
            self.rate_control.begin("warmup" if warmup else "measure", start, seconds)
            self.rate_control.poll(self.worker, start)
        tick_number = 1
        while True:
            tick = min(start + tick_number * self.options.stats_interval_s, end)
            self._sleep_until(tick)
            self.take(warmup=warmup)
            if tick >= end:
                return
            tick_number += 1

    def run_until(self, done: Callable[[], bool], timeout_s: float) -> bool:
        """Snapshot every stats interval until ``done()`` holds (checked every 0.1 s) or
        ``timeout_s`` passed, then once more, so the phase ends on an interval boundary."""
        start = time.monotonic()
        deadline = start + timeout_s
        tick = start + self.options.stats_interval_s
        while not (reached := done()) and time.monotonic() < deadline:
            self._sleep_until(min(time.monotonic() + CHECK_S, tick, deadline))
            if time.monotonic() >= tick:
                self.take(warmup=False)
                tick += self.options.stats_interval_s
        self.take(warmup=False)
        return reached

    def _sleep_until(self, deadline: float) -> None:
        """Sleep in short steps so a dead producer loop (or worker) is noticed within 0.25 s."""
        while (remaining := deadline - time.monotonic()) > 0:
            time.sleep(min(remaining, 0.25))
            error = self.worker.loop_error()
            if isinstance(error, LoadgenError):
                raise error  # already says what stopped (a lost worker, a worker's own error)
            if error is not None:
                raise DriverError("producer", f"the producer loop stopped: {error!r}") from error
            self.look_for_outages()
            if self.rate_control is not None:
                self.rate_control.poll(self.worker, time.monotonic())


def _check_inputs(workload: Workload, options: RunOptions) -> None:
    refused = [
        (
            bool(options.topic_names) and len(options.topic_names) != workload.topics,
            "topics",
            workload.topics,
            f"{len(options.topic_names)} topic name(s) were given for this many topics",
            f"{len(options.topic_names)}",
        ),
        (
            workload.producers_per_topic < 1 and not options.topic_names,
            "producersPerTopic",
            workload.producers_per_topic,
            "a consumer-only run (no producers) reads existing topics: name them "
            "(--existing-topics) or give producers",
            "at least 1, or 0 with existing topics",
        ),
    ]
    for failed, path, value, message, allowed in refused:
        if failed:
            raise ConfigError(message, path=path, value=value, allowed=allowed)


def run_tailing(
    worker: Worker, workload: Workload, payloads: list[bytes], options: RunOptions
) -> RunOutcome:
    """Run ``workload`` on ``worker``; always returns what was measured, even when cut short."""
    _check_inputs(workload, options)
    outcome = RunOutcome(started_ms=options.started_ms or _now_ms())
    rate_control = rate_control_for(workload)
    measurement = _Measurement(worker, workload, options, rate_control)
    phase_is_warmup = True
    clock = _PhaseClock(outcome.phase_seconds)
    try:
        options.begin("setup")
        worker.check_reachable(options.reachable_timeout_s)
        clock.mark("connect")
        outcome.topics = worker.create_topics(
            workload.topics, workload.partitions_per_topic, options.topic_names
        )
        clock.mark("topics")
        subscriptions = consumer_subscriptions(
            outcome.topics, workload.subscriptions_per_topic, workload.consumer_per_subscription
        )
        catch_up = set()
        if workload.is_catch_up:
            catch_up = catch_up_subscriptions(
                subscriptions, workload.tailing_subscriptions_per_topic
            )
        delays = delay_pool(workload.consumer_delay) if workload.consumer_delay else []
        worker.create_consumers(subscriptions, catch_up, delays)
        clock.mark("consumers")
        worker.create_producers(producer_topics(outcome.topics, workload.producers_per_topic))
        clock.mark("producers")
        producing = workload.producers_per_topic > 0
        if worker.has_consumers and producing:
            worker.probe(
                workload.topics * workload.subscriptions_per_topic, options.probe_timeout_s
            )
            clock.mark("probe")
        warmup_s = workload.warmup_duration_s if options.warmup_s is None else options.warmup_s
        duration_s = workload.test_duration_s if options.duration_s is None else options.duration_s
        if producing:
            rate = workload.producer_rate if rate_control is None else rate_control.start_rate
            worker.start_load(
                rate, payloads, workload.key_distributor, workload.producer_max_in_flight
            )
            measurement.watch_outages(rate)
        measurement.interval_start_ms = _now_ms()
        if warmup_s > 0:
            options.begin("warmup", warmup_s)
            measurement.run_phase(warmup_s, warmup=True)
            clock.mark("warmup")
        phase_is_warmup = False
        if workload.is_catch_up:
            outcome.catch_up = CatchUpOutcome(CatchUpPlan.of(workload))
            options.begin("catch-up")
            measurement.consuming = False
            build_and_drain(
                worker,
                outcome.catch_up,
                measurement.run_until,
                lambda: measurement.interval_start_ms,
                options.catch_up_timeout_s,
            )
            clock.mark("catch-up")
            measurement.consuming = True
        options.begin("measure", duration_s)
        measurement.run_phase(duration_s, warmup=False)
        clock.mark("measure")
        _finish(worker, measurement, workload, options, outcome)
        clock.mark("drain")
    except KeyboardInterrupt:
        _cut_short(
            worker, measurement, outcome, "interrupted", "stopped by the user", phase_is_warmup
        )
    except LoadgenError as error:
        if not outcome.topics:
            raise  # nothing was set up, so there is nothing to report but the error
        _cut_short(worker, measurement, outcome, error.stop_reason, str(error), phase_is_warmup)
    finally:
        if outcome.topics:  # otherwise nothing was sent, and a worker may have no driver
            _last_look(measurement)
            outcome.accounting = _account(worker, drained=not outcome.incomplete)
        try:
            options.begin("teardown")
            delete = not (options.keep_topics or options.topic_names)
            if outcome.stop_reason == "interrupted":
                _close_soon(worker, delete, outcome.topics, INTERRUPTED_TEARDOWN_S, "interrupted")
            elif measurement.outages is not None and measurement.outages.silent():
                _close_soon(
                    worker, delete, outcome.topics, SILENT_BROKER_TEARDOWN_S, "broker not answering"
                )
            else:
                worker.close(delete_topics=delete)
        except KeyboardInterrupt:  # a second Ctrl-C must not cost the result
            log.warning("teardown interrupted; topics %s may remain", outcome.topics)
        clock.mark("teardown")
        outcome.intervals = measurement.intervals
        outcome.totals = worker.totals
        outcome.placement = worker.placement()
        outcome.worker_intervals = worker.worker_intervals
        if rate_control is not None:
            outcome.extensions |= rate_control.report()
        outcome.ended_ms = _now_ms()
        if measurement.outages is not None:
            outcome.extensions["outages"] = measurement.outages.report(outcome.ended_ms)
    return outcome


def _close_soon(
    worker: Worker, delete_topics: bool, topics: list[str], within_s: float, why: str
) -> None:
    """Teardown that must end within seconds (after Ctrl-C or SIGTERM, or with the broker not
    answering): a stalled broker can hold a topic deletion or a client's close for tens of
    seconds, so this waits ``within_s`` and leaves the rest to the process's exit."""
    failure: list[BaseException] = []

    def close() -> None:
        try:
            worker.close(delete_topics=delete_topics)
        except BaseException as error:  # raised again on the caller's thread
            failure.append(error)

    closing = threading.Thread(target=close, name="teardown", daemon=True)
    closing.start()
    closing.join(within_s)
    if closing.is_alive():
        log.warning(
            "teardown did not finish within %.1f s (%s); topics %s may remain",
            within_s,
            why,
            topics,
        )
    elif failure:
        raise failure[0]


def _last_look(measurement: _Measurement) -> None:
    """An outage may end during the drain (a broker back in time to deliver what it held)."""
    try:
        measurement.look_for_outages()
    except Exception as error:  # the result must be written all the same
        log.warning("reading the counters after the run failed: %s", error)


def _account(worker: Worker, *, drained: bool) -> Accounting | None:
    """Collect every worker's id ranges before teardown; losses count only after a drain."""
    try:
        return account(worker.accounting(), drained=drained)
    except Exception as error:  # the result must be written all the same
        log.warning("accounting for lost and duplicated messages failed: %s", error)
        return None


def _settle(worker: Worker, deadline: float) -> None:
    """Wait until no message arrived for :data:`SETTLE_S`: more than the expected count means
    duplicates, which may stand in the count for messages still on their way."""
    received = worker.received_so_far()
    while time.monotonic() < deadline:
        time.sleep(SETTLE_S)
        now = worker.received_so_far()
        if now == received:
            return
        received = now


def _finish(
    worker: Worker,
    measurement: _Measurement,
    workload: Workload,
    options: RunOptions,
    outcome: RunOutcome,
) -> None:
    """Stop producers, let consumers drain in-flight messages, fold that into the last interval.

    The drained messages were sent during the measurement, so their counts and latencies belong
    to it; the interval still ends when sending stopped. Ending it after the drain diluted every
    rate of the run by the drain's length: a few messages a broker never delivered held the
    drain for its whole timeout, and a 5k msg/s run on Pulsar reported 4.3k.
    """
    started = time.monotonic()
    stopped_ms = _now_ms()
    options.begin("drain", options.drain_timeout_s)
    outcome.pending_acks = worker.stop_load(options.drain_timeout_s)
    measurement.publishing = outcome.pending_acks > 0
    expected = worker.sent_so_far() * workload.subscriptions_per_topic
    deadline = started + options.drain_timeout_s
    while worker.received_so_far() < expected and time.monotonic() < deadline:
        time.sleep(0.005)
    if worker.received_so_far() > expected:
        _settle(worker, deadline)
    outcome.drain_seconds = time.monotonic() - started
    outcome.undelivered = max(0, expected - worker.received_so_far())
    if outcome.undelivered:
        log.warning(
            "%d messages were not received within the %.0f s drain",
            outcome.undelivered,
            options.drain_timeout_s,
        )
    last = measurement.intervals.pop() if measurement.intervals else None
    drained = worker.snapshot(measurement.interval_start_ms, stopped_ms, warmup=False)
    whole_last = merge_all([last, drained]) if last is not None else drained
    measurement.intervals.append(measurement.spill.keep(whole_last))


def _cut_short(
    worker: Worker,
    measurement: _Measurement,
    outcome: RunOutcome,
    reason: str,
    detail: str,
    warmup: bool,
) -> None:
    """Keep what was measured when a run ends early."""
    outcome.incomplete = True
    outcome.stop_reason = reason
    outcome.stop_detail = detail
    try:
        worker.stop_load(flush_timeout_s=CUT_SHORT_FLUSH_S)
    except Exception as error:
        log.warning("stopping the load failed: %s", error)
    measurement.take(warmup=warmup)
