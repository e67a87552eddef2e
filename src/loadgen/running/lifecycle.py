"""OMB's run lifecycle: every run, whatever its scenario, goes through :func:`run_workload`.

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
from collections.abc import Callable, Sequence

from loadgen.base.errors import ConfigError, DriverError, LoadgenError
from loadgen.engine.accounting import Accounting, account
from loadgen.engine.contract import Worker
from loadgen.engine.listeners import NO_LISTENERS, Listeners
from loadgen.engine.outcome import CatchUpOutcome, CatchUpPlan, RunOutcome
from loadgen.engine.plan import catch_up_subscriptions, consumer_subscriptions, producer_topics
from loadgen.engine.spill import Spill
from loadgen.engine.stats import IntervalStats, merge_all, running_backlogs
from loadgen.running import stop
from loadgen.running.request import RunOptions
from loadgen.running.scenarios.catch_up import (
    CHECK_S,
    backlog_drain_timeout_s,
    build_and_drain,
    stall_window_s,
)
from loadgen.running.scenarios.consumer_changes import consumer_changes_for
from loadgen.running.scenarios.outages import OutageWatch, threshold_for
from loadgen.running.scenarios.rate_control import PhaseControl, rate_control_for
from loadgen.spec import Workload
from loadgen.spec.consumer_changes import check_within
from loadgen.spec.consumer_delay import delay_pool
from loadgen.spec.faults import check_faults_within

log = logging.getLogger("loadgen.run")

SETTLE_S = 0.05
SILENT_BROKER_TEARDOWN_S = 5.0
"""How long teardown may take when the broker had stopped acknowledging at the end of the run:
deleting topics on a broker that does not answer waits out the driver's admin timeout (30 s on
Kafka) for nothing."""


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
        listeners: Listeners,
        controls: Sequence[PhaseControl] = (),
    ) -> None:
        self.worker = worker
        self.subscriptions = workload.subscriptions_per_topic
        self.options = options
        self.listeners = listeners
        self.controls = tuple(controls)
        """What changes the load while it runs (a rate control, consumer changes)."""
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

    def backlog_now(self) -> int:
        """The backlog from the intervals taken so far, as the result's ``backlog`` counts it."""
        backlogs = running_backlogs(self.intervals, self.subscriptions)
        return backlogs[-1] if backlogs else 0

    def take(self, *, warmup: bool) -> None:
        end_ms = _now_ms()
        stats = self.worker.snapshot(self.interval_start_ms, end_ms, warmup=warmup)
        self.interval_start_ms = end_ms
        kept = self.spill.keep(stats)  # the one copy: a checkpoint keeps this object too
        self.intervals.append(kept)
        self.listeners.interval(kept, self.backlog())

    def run_phase(self, seconds: float, *, warmup: bool) -> None:
        """Snapshot on an absolute tick every stats interval until ``seconds`` have passed."""
        start = time.monotonic()
        end = start + seconds
        for control in self.controls:
            control.begin("warmup" if warmup else "measure", start, seconds)
            control.poll(self.worker, start)
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
            for control in self.controls:
                control.poll(self.worker, time.monotonic())


def _check_inputs(workload: Workload, options: RunOptions) -> None:
    if options.duration_s is not None:
        check_within(workload.consumer_changes, options.duration_s)
        check_faults_within(workload.faults, options.duration_s)
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


def run_workload(
    worker: Worker,
    workload: Workload,
    payloads: list[bytes],
    options: RunOptions,
    listeners: Listeners = NO_LISTENERS,
    controls: Sequence[PhaseControl] = (),
) -> RunOutcome:
    """Run ``workload`` on ``worker``; always returns what was measured, even when cut short.

    ``listeners`` are told of each phase as it begins and of each interval as it ends;
    ``controls`` change the load as it runs, beside the workload's own (a fault schedule).
    """
    _check_inputs(workload, options)
    run = _Lifecycle(worker, workload, options, listeners, controls)
    try:
        run.set_up()
        run.start_load(payloads)
        run.warm_up()
        run.catch_up()
        run.measure()
    except KeyboardInterrupt:
        run.cut_short("interrupted", "stopped by the user")
    except LoadgenError as error:
        if not run.outcome.topics:
            raise  # nothing was set up, so there is nothing to report but the error
        if isinstance(error, ConfigError) and not run.measurement.intervals:
            raise  # bad input found in set-up (exit 2): nothing was measured to keep
        run.cut_short(error.stop_reason, str(error))
    finally:
        run.tear_down()
    return run.outcome


class _Lifecycle:
    """The steps of one run in OMB's order; each fills in the outcome as it goes."""

    def __init__(
        self,
        worker: Worker,
        workload: Workload,
        options: RunOptions,
        listeners: Listeners,
        controls: Sequence[PhaseControl] = (),
    ) -> None:
        self.worker = worker
        self.workload = workload
        self.options = options
        self.listeners = listeners
        self.outcome = RunOutcome(started_ms=options.started_ms or _now_ms())
        self.rate_control = rate_control_for(workload)
        ours = (self.rate_control, consumer_changes_for(workload))
        self.measurement = _Measurement(
            worker, workload, options, listeners, [*(c for c in ours if c), *controls]
        )
        self.in_warmup = True
        self.clock = _PhaseClock(self.outcome.phase_seconds)
        self.producing = workload.producers_per_topic > 0

    def set_up(self) -> None:
        """Topics, consumers, producers, and a probe that every subscription receives."""
        worker, workload, clock = self.worker, self.workload, self.clock
        self.listeners.phase("setup")
        worker.check_reachable(self.options.reachable_timeout_s)
        clock.mark("connect")
        self.outcome.topics = worker.create_topics(
            workload.topics, workload.partitions_per_topic, self.options.topic_names
        )
        clock.mark("topics")
        subscriptions = consumer_subscriptions(
            self.outcome.topics,
            workload.subscriptions_per_topic,
            workload.consumer_per_subscription,
        )
        catch_up = set()
        if workload.is_catch_up:
            catch_up = catch_up_subscriptions(
                subscriptions, workload.tailing_subscriptions_per_topic
            )
        delays = delay_pool(workload.consumer_delay) if workload.consumer_delay else []
        worker.create_consumers(subscriptions, catch_up, delays)
        clock.mark("consumers")
        worker.create_producers(producer_topics(self.outcome.topics, workload.producers_per_topic))
        clock.mark("producers")
        if worker.has_consumers and self.producing:
            subscribed = workload.topics * workload.subscriptions_per_topic
            worker.probe(subscribed, self.options.probe_timeout_s)
            clock.mark("probe")

    def start_load(self, payloads: list[bytes]) -> None:
        """Producers start at the workload's rate (or the rate control's first one)."""
        workload = self.workload
        if self.producing:
            control = self.rate_control
            rate = workload.producer_rate if control is None else control.start_rate
            self.worker.start_load(
                rate, payloads, workload.key_distributor, workload.producer_max_in_flight
            )
            self.measurement.watch_outages(rate)
        self.measurement.interval_start_ms = _now_ms()

    def warm_up(self) -> None:
        warmup_s = self.options.warmup_s
        if warmup_s is None:
            warmup_s = self.workload.warmup_duration_s
        if warmup_s > 0:
            self.listeners.phase("warmup", warmup_s)
            self.measurement.run_phase(warmup_s, warmup=True)
            self.clock.mark("warmup")
        self.in_warmup = False

    def catch_up(self) -> None:
        """Catch-up and mixed runs: build a backlog and time its drain (before the measure)."""
        if not self.workload.is_catch_up:
            return
        measurement = self.measurement
        self.outcome.catch_up = CatchUpOutcome(CatchUpPlan.of(self.workload))
        self.listeners.phase("catch-up")
        measurement.consuming = False
        build_and_drain(
            self.worker,
            self.outcome.catch_up,
            measurement.run_until,
            lambda: measurement.interval_start_ms,
            self.options.catch_up_timeout_s,
            backlog_drain_timeout_s(self.options, self.workload),
            stall_window_s(self.options.stats_interval_s),
        )
        self.clock.mark("catch-up")
        measurement.consuming = True

    def measure(self) -> None:
        """The measured phase, then the drain of what is still in flight; a catch-up run whose
        drain did not come ends without it: its consumers are known not to keep up."""
        catch_up = self.outcome.catch_up
        keeping_up = catch_up is None or catch_up.drained
        if keeping_up:
            duration_s = self.options.duration_s
            if duration_s is None:
                duration_s = self.workload.test_duration_s
            self.listeners.phase("measure", duration_s)
            self.measurement.run_phase(duration_s, warmup=False)
            self.settle_controls()
            self.clock.mark("measure")
        _finish(
            self.worker,
            self.measurement,
            self.workload,
            self.options,
            self.outcome,
            wait_for_reads=keeping_up,
        )
        self.clock.mark("drain")

    def cut_short(self, reason: str, detail: str) -> None:
        _cut_short(self.worker, self.measurement, self.outcome, reason, detail, self.in_warmup)

    def settle_controls(self) -> None:
        for control in self.measurement.controls:
            control.settle()

    def tear_down(self) -> None:
        """Account, close (deleting fresh topics), and collect what the worker knows."""
        self.settle_controls()  # a run cut short: faults undone before anything is closed
        outcome, measurement = self.outcome, self.measurement
        if outcome.topics:  # otherwise nothing was sent, and a worker may have no driver
            _last_look(measurement)
            silent = measurement.outages is not None and measurement.outages.silent()
            with stop.step("accounting"):
                outcome.accounting = _account(self.worker, outcome, ask_broker=not silent)
        try:
            self.listeners.phase("teardown")
            with stop.step("teardown"):
                self._close()
        except KeyboardInterrupt:  # a signal during teardown must not cost the result
            log.warning("teardown interrupted; topics %s may remain", outcome.topics)
        self.clock.mark("teardown")
        with stop.step("collect"):
            self._collect()

    def _close(self) -> None:
        worker, topics = self.worker, self.outcome.topics
        delete = not (self.options.keep_topics or self.options.topic_names)
        outages = self.measurement.outages
        if self.outcome.stop_reason == "interrupted":
            within_s = stop.left(stop.TEARDOWN_S)
            _close_soon(worker, delete, topics, within_s, "interrupted")
        elif outages is not None and outages.silent():
            _close_soon(worker, delete, topics, SILENT_BROKER_TEARDOWN_S, "broker not answering")
        else:
            worker.close(delete_topics=delete)

    def _collect(self) -> None:
        outcome, worker = self.outcome, self.worker
        outcome.intervals = self.measurement.intervals
        outcome.totals = worker.totals
        outcome.placement = worker.placement()
        outcome.worker_intervals = worker.worker_intervals
        if scaling := worker.topic_scaling():
            outcome.extensions["topicScaling"] = scaling
        for control in self.measurement.controls:
            outcome.extensions |= control.report()
        outcome.ended_ms = _now_ms()
        if self.measurement.outages is not None:
            outcome.extensions["outages"] = self.measurement.outages.report(outcome.ended_ms)


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


def _account(worker: Worker, outcome: RunOutcome, *, ask_broker: bool) -> Accounting | None:
    """Collect every worker's id ranges before teardown; losses count only after a drain, and
    what a drain left undelivered may be in the broker still: the workers ask it (unless it
    had stopped answering)."""
    drained = not outcome.incomplete
    try:
        unsure = outcome.undelivered > 0 or outcome.counts_inconclusive
        ledgers = worker.accounting(ask_broker=ask_broker and drained and unsure)
        return account(ledgers, drained=drained)
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
    *,
    wait_for_reads: bool = True,
) -> None:
    """Stop producers, let consumers drain in-flight messages, fold that into the last interval.

    The drained messages were sent during the measurement, so their counts and latencies belong
    to it; the interval still ends when sending stopped, not after the drain: a few messages a
    broker never delivers hold the drain for its whole timeout, and that time must not dilute
    the run's rates. Without ``wait_for_reads`` only acknowledgements are waited for; what was
    not read is asked of the broker by the accounting.
    """
    started = time.monotonic()
    stopped_ms = _now_ms()
    outcome.backlog_at_stop = measurement.backlog_now()
    measurement.listeners.phase("drain", options.drain_timeout_s)
    outcome.pending_acks = worker.stop_load(options.drain_timeout_s)
    measurement.publishing = outcome.pending_acks > 0
    # a duplicate received earlier (a redelivery after a reconnect) counts as a delivery: the
    # drain waits for it on top, or it would end with a message still on its way, called lost
    duplicates = sum(stats.duplicates for stats in measurement.intervals)
    failed_sends = sum(stats.send_errors for stats in measurement.intervals)
    expected = worker.sent_so_far() * workload.subscriptions_per_topic + duplicates
    deadline = started + (options.drain_timeout_s if wait_for_reads else 0.0)
    while worker.received_so_far() < expected and time.monotonic() < deadline:
        time.sleep(0.005)
    if worker.received_so_far() > expected:
        _settle(worker, deadline)
    outcome.drain_seconds = time.monotonic() - started
    received = worker.received_so_far()  # once: both verdicts on the same count
    outcome.counts_inconclusive = bool(duplicates or failed_sends or outcome.pending_acks) or (
        received > expected
    )
    outcome.undelivered = max(0, expected - received)
    if outcome.undelivered and wait_for_reads:
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
        with stop.step("stopLoad"):
            worker.stop_load(flush_timeout_s=stop.left(stop.FLUSH_S))
    except Exception as error:
        log.warning("stopping the load failed: %s", error)
    with stop.step("lastInterval"):
        measurement.take(warmup=warmup)
