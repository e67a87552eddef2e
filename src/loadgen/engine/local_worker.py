"""The local worker: owns one driver's producers, consumers, producer loop and recorders.

It knows nothing about any broker; it turns recorders into :class:`IntervalStats` snapshots and
keeps the running totals that readiness, drain and backlog checks need.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from loadgen.base import hdr
from loadgen.base.cpu_use import CpuMeter
from loadgen.base.errors import ConfigError, DriverError
from loadgen.base.thread_names import name_threads_for_the_os
from loadgen.driver_api import (
    NO_MESSAGE_ID,
    NO_SEND_TIME_NS,
    BaseDriver,
    Consumer,
    Producer,
    ScalingTopics,
    TopicSpec,
    TransactionalProducer,
)
from loadgen.engine.accounting import Ledger, Receipt, message_id_base
from loadgen.engine.keys import key_source
from loadgen.engine.names import topic_names
from loadgen.engine.payload import PROBE_PAYLOAD
from loadgen.engine.plan import Subscription
from loadgen.engine.producer_loop import ProducerLoop
from loadgen.engine.recorder import (
    ENGINE,
    ConsumerRecorder,
    ProducerRecorder,
    Receipts,
    pairs,
    receipt_of,
    subscription_receipts,
)
from loadgen.engine.sent_bytes import SentBytes
from loadgen.engine.skew import ClockTable
from loadgen.engine.slow_consumer import delayed
from loadgen.engine.stats import (
    END_TO_END,
    END_TO_END_CATCH_UP,
    END_TO_END_FROM_INTENDED,
    END_TO_END_TAILING,
    END_TO_END_UNCORRECTED,
    PUBLISH,
    PUBLISH_DELAY,
    PUBLISH_FROM_INTENDED,
    TRANSACTION_ABORT,
    TRANSACTION_COMMIT,
    IntervalStats,
)
from loadgen.engine.unread import UNREAD_QUERY_S, unread_by_subscription

log = logging.getLogger("loadgen.engine")

PROBE_KEY = b"key"
PROBE_CHECK_S = 0.02
"""How often the readiness check counts the probe messages received (across workers: one
HTTP request per worker)."""
WORKER_ID = "local"
"""The id of the in-process worker in results and pipeline records (remote ones go by URL)."""
MIN_RATE = 1.0
"""The lowest rate a rate adjustment sets (OMB's LocalWorker clamps below 1 msg/s to 1)."""


@dataclass
class Totals:
    """Running totals over the whole run, probe and warm-up included."""

    sent: int = 0
    received: int = 0
    probe_sent: int = 0
    probe_received: int = 0
    received_catch_up: int = 0
    """Of ``received``, what catch-up subscriptions received (their backlog is measured)."""


@dataclass(frozen=True)
class Progress:
    """Running counters, read between intervals to spot outages
    (:mod:`loadgen.running.scenarios.outages`)."""

    acked: int
    received: int
    errors: int


def await_probes(
    received_so_far: Callable[[], int], expected: int, deadline: float, timeout_s: float
) -> None:
    """Wait until consumers (of one worker or all) received ``expected`` probe messages."""
    while (received := received_so_far()) < expected:
        if time.monotonic() > deadline:
            raise DriverError(
                "readiness",
                f"consumers received {received} of {expected} probe messages "
                f"within {timeout_s:.0f} s",
            )
        time.sleep(PROBE_CHECK_S)


def _merged(metric: str, parts: list[hdr.Histogram]) -> hdr.Histogram:
    """``parts`` (end-to-end histograms of several consumers) merged, as ``metric``: the
    end-to-end metrics share one layout."""
    merged = hdr.merge(END_TO_END, (hdr.Histogram(END_TO_END, p.index, p.counts) for p in parts))
    return hdr.Histogram(metric, merged.index, merged.counts)


class _Left:
    """A consumer that left the run (``consumerChanges``): closed, holding no partitions."""

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def unread(self, timeout_s: float) -> dict[str, int]:
        return {}

    def close(self) -> None: ...


class LocalWorker:
    """Creates the load on one driver in this process and measures it."""

    def __init__(self, driver: BaseDriver) -> None:
        hdr.prepare_layouts()  # in set-up, not in the first snapshot of the load
        self.driver = driver
        self.topics: list[str] = []
        self._owns_topics = False
        self._producers: list[Producer] = []
        self._transactional: list[TransactionalProducer] = []
        self._consumers: list[Consumer] = []
        self._consumer_recorders: list[ConsumerRecorder] = []
        self._receipts: dict[Subscription, Receipts] = {}
        """Per subscription, what its consumers received (the C engine keeps it as they do)."""
        self._delays: Sequence[float] = ()
        """The consumer delays the run's consumers were made with (joining ones get them too)."""
        self._catch_up: list[bool] = []
        """Per consumer: does it belong to a catch-up subscription (paused to build a backlog)?"""
        self._producer_recorder = ProducerRecorder()
        self._cpu = CpuMeter()
        self._loop: ProducerLoop | None = None
        self._sent_bytes: SentBytes | None = None
        self._id_bases: list[int] = []
        self._clocks: ClockTable | None = None
        self.ledger = Ledger()
        self.totals = Totals()
        self._topic_scaling: list[dict[str, Any]] = []

    # -- set-up -----------------------------------------------------------------------------
    def check_reachable(self, timeout_s: float) -> None:
        self.driver.check_reachable(timeout_s)

    def create_topics(self, count: int, partitions: int, names: tuple[str, ...] = ()) -> list[str]:
        """``count`` fresh topics, or ``names`` as given (the driver creates those if absent)."""
        names = list(names) or topic_names(self.driver.topic_name_prefix, count)
        self.driver.create_topics([TopicSpec(name, partitions) for name in names])
        self.topics = names
        self._owns_topics = True
        return names

    def adopt_topics(self, names: list[str], partitions: int) -> None:
        """Use topics another worker created: the driver learns what it needs of them and never
        deletes them."""
        self.driver.adopt_topics([TopicSpec(name, partitions) for name in names])
        self.topics = names
        self._owns_topics = False

    def create_consumers(
        self,
        subscriptions: Sequence[Subscription],
        catch_up: Collection[str] = (),
        delays: Sequence[float] = (),
    ) -> None:
        """Consumers for ``subscriptions``; those whose subscription is in ``catch_up`` build
        and then read a backlog (:meth:`pause_catch_up`), the others tail. With ``delays``
        (seconds, :func:`loadgen.spec.consumer_delay.delay_pool`) each consumer sleeps after
        every message; without, the recorder is the callback itself."""
        for topic, subscription in subscriptions:
            receipts = self._receipts.get((topic, subscription)) or subscription_receipts()
            recorder = ConsumerRecorder(receipts)
            if self._clocks is not None:
                recorder.correct_clocks(self._clocks)
            self._delays = delays
            on_message = delayed(recorder.on_message, delays) if delays else recorder.on_message
            consumer = self.driver.create_consumer(topic, subscription, on_message)
            self._consumers.append(consumer)
            self._consumer_recorders.append(recorder)
            self.ledger.add_consumer(topic, subscription)
            if receipts is not None:  # taken at a snapshot only once the ledger knows it
                self._receipts[(topic, subscription)] = receipts
            self._catch_up.append(subscription in catch_up)

    def partition_leader(self, partition: int) -> str | None:
        return self.driver.partition_leader(self.topics[0], partition) if self.topics else None

    def change_consumers(self, *, join: int, leave: int) -> None:
        """Add ``join`` consumers to every subscription of the run, or close the ``leave``
        latest of each (a closed one keeps its place, and its recorder, as a :class:`_Left`).
        Not for catch-up runs: the workload refuses the combination."""
        names = list(dict.fromkeys(self.ledger.consumer_subscriptions))
        if join:
            self.create_consumers([name for name in names for _ in range(join)], (), self._delays)
        for name in names if leave else ():
            live = [
                index
                for index, owner in enumerate(self.ledger.consumer_subscriptions)
                if owner == name and not isinstance(self._consumers[index], _Left)
            ]
            for index in live[-leave:]:
                consumer, self._consumers[index] = self._consumers[index], _Left()
                consumer.close()

    def pause_catch_up(self, paused: bool) -> None:
        """Pause (to build a backlog) or resume (to read it) the catch-up consumers."""
        for consumer, catch_up in zip(self._consumers, self._catch_up, strict=True):
            if catch_up:
                consumer.pause() if paused else consumer.resume()

    def create_producers(self, topics: Sequence[str], first_number: int = 0) -> None:
        """One producer per entry; they are numbered from ``first_number`` on, and the number
        is in every message id, so it must be unique across the run's workers."""
        for number, topic in enumerate(topics, start=first_number + len(self._producers)):
            producer = self.driver.create_producer(topic)
            self._producers.append(producer)
            if isinstance(producer, TransactionalProducer):
                self._transactional.append(producer)
            self._id_bases.append(message_id_base(number))
            self.ledger.add_producer(number, topic)

    def correct_clocks(self, table: ClockTable) -> None:
        """From the next snapshot on, correct end-to-end latencies by the producers' and this
        worker's clock offsets, and record the uncorrected ones as ``endToEndUncorrected``
        (called before the load starts: the recorders correct what they record after it)."""
        self._clocks = table
        for recorder in self._consumer_recorders:
            recorder.correct_clocks(table)

    # -- readiness ----------------------------------------------------------------------------
    def probe(self, expected_received: int, timeout_s: float) -> None:
        """OMB's readiness check: one probe message per producer, then wait for delivery.

        Probe messages count in the run totals (as in OMB); their latencies are discarded.
        """
        deadline = time.monotonic() + timeout_s
        self.send_probes(timeout_s)
        await_probes(self.received_so_far, expected_received, deadline, timeout_s)
        self.end_probe()

    def send_probes(self, timeout_s: float) -> None:
        """Send one probe message per producer and wait until every one is acknowledged."""
        acks: list[BaseException | None] = []
        for producer in self._producers:
            producer.send(
                PROBE_KEY,
                PROBE_PAYLOAD,
                lambda error, *_: acks.append(error),
                NO_MESSAGE_ID,
                NO_SEND_TIME_NS,
            )
        deadline = time.monotonic() + timeout_s
        while len(acks) < len(self._producers):
            if time.monotonic() > deadline:
                raise DriverError(
                    "readiness",
                    f"{len(acks)} of {len(self._producers)} probe sends were acknowledged "
                    f"within {timeout_s:.0f} s",
                )
            for producer in self._producers:
                producer.poll()
            time.sleep(0.01)
        failed = [error for error in acks if error is not None]
        if failed:
            raise DriverError("readiness", f"probe send failed: {failed[0]}")

    def end_probe(self) -> None:
        """Count the probe messages in the totals and drop their latencies."""
        counts = [recorder.discard() for recorder in self._consumer_recorders]
        for receipts in self._receipts.values():
            receipts.forget()
        received = sum(counts)
        self.totals.received_catch_up += sum(self._of_catch_up(counts))
        self.totals.probe_received = received
        self.totals.probe_sent = len(self._producers)
        self.totals.received += received
        self.totals.sent += len(self._producers)

    # -- load -----------------------------------------------------------------------------------
    def start_load(
        self,
        rate: float,
        payloads: list[bytes],
        key_distributor: str,
        max_in_flight: int | None = None,
    ) -> None:
        if max_in_flight is not None and self._transactional:
            raise ConfigError(
                "producerMaxInFlight cannot be combined with transactions: a message is "
                "acknowledged only when its transaction commits",
                path="producerMaxInFlight",
                value=max_in_flight,
            )
        self._sent_bytes = SentBytes(payloads, self._id_bases)
        self._loop = ProducerLoop(
            self._producers,
            payloads,
            key_source(key_distributor),
            rate,
            self._producer_recorder,
            self._id_bases,
            max_in_flight,
        )
        self._loop.start()
        name_threads_for_the_os()  # the loop, the consumers and the clients' Python threads

    def adjust_rate(self, rate: float, *, keep_lag: bool) -> None:
        """Send at ``rate`` from now on; below 1 msg/s it is 1 msg/s (OMB's floor)."""
        if self._loop is not None:
            self._loop.adjust_rate(max(rate, MIN_RATE), keep_lag=keep_lag)

    def stop_load(self, flush_timeout_s: float) -> int:
        """Stop sending and wait for in-flight acknowledgements; return how many never came."""
        deadline = time.monotonic() + flush_timeout_s
        if self._loop is not None:
            self._loop.stop(flush_timeout_s)
        pending = 0
        for producer in self._producers:
            pending += producer.flush(max(deadline - time.monotonic(), 0.0))
        return pending

    def loop_error(self) -> BaseException | None:
        return self._loop.error if self._loop is not None else None

    @property
    def has_consumers(self) -> bool:
        return bool(self._consumers)

    # -- measurement --------------------------------------------------------------------------
    def sent_so_far(self) -> int:
        return self.totals.sent + self._producer_recorder.acked_count

    def received_so_far(self) -> int:
        return self.totals.received + sum(r.received for r in self._consumer_recorders)

    def progress(self) -> Progress:
        return Progress(self.sent_so_far(), self.received_so_far(), self._producer_recorder.errors)

    def received_catch_up_so_far(self) -> int:
        pending = self._of_catch_up([r.received for r in self._consumer_recorders])
        return self.totals.received_catch_up + sum(pending)

    def _of_catch_up(self, per_consumer: list) -> list:
        roles = zip(per_consumer, self._catch_up, strict=True)
        return [item for item, catch_up in roles if catch_up]

    def snapshot(self, start_ms: int, end_ms: int, *, warmup: bool) -> IntervalStats:
        """Take everything recorded since the last snapshot as one interval."""
        produced = self._producer_recorder.take()
        consumed = [recorder.take() for recorder in self._consumer_recorders]
        identities = [pairs(each.identities) for each in consumed]
        counts = self.ledger.record(identities, pairs(produced.acked_runs), self._receipts_taken())
        self.ledger.ack_marks.interval_ended(end_ms)
        sent, received = produced.acked_count, sum(each.received for each in consumed)
        negative = sum(each.negative for each in consumed)
        catch_up = self._of_catch_up(consumed)
        received_catch_up = sum(sample.received for sample in catch_up)
        self.totals.sent += sent
        self.totals.received += received
        self.totals.received_catch_up += received_catch_up
        histograms = {
            PUBLISH: produced.publish,
            PUBLISH_DELAY: produced.publish_delay,
            PUBLISH_FROM_INTENDED: produced.publish_from_intended,
            END_TO_END: _merged(END_TO_END, [each.end_to_end for each in consumed]),
            END_TO_END_FROM_INTENDED: _merged(
                END_TO_END_FROM_INTENDED, [each.from_intended for each in consumed]
            ),
        }
        negative_uncorrected = negative
        if self._clocks is not None:
            raw = [each.uncorrected for each in consumed if each.uncorrected is not None]
            histograms[END_TO_END_UNCORRECTED] = _merged(END_TO_END_UNCORRECTED, raw)
            negative_uncorrected = sum(each.negative_uncorrected for each in consumed)
        if any(self._catch_up):
            roles = zip(consumed, self._catch_up, strict=True)
            tailing = [each.end_to_end for each, of_catch_up in roles if not of_catch_up]
            histograms[END_TO_END_TAILING] = _merged(END_TO_END_TAILING, tailing)
            histograms[END_TO_END_CATCH_UP] = _merged(
                END_TO_END_CATCH_UP, [each.end_to_end for each in catch_up]
            )
        withdrawn = self._take_transactions(histograms)
        cpu = self._cpu.take()
        return IntervalStats(
            start_ms=start_ms,
            end_ms=end_ms,
            sent=sent,
            send_errors=produced.errors,
            bytes_sent=0 if self._sent_bytes is None else self._sent_bytes.of(produced),
            received=received,
            bytes_received=sum(sample.received_bytes for sample in consumed),
            negative_e2e=negative,
            negative_e2e_uncorrected=negative_uncorrected,
            duplicates=counts.duplicates,
            out_of_order=counts.out_of_order,
            received_catch_up=received_catch_up,
            cpu_ns=cpu.cpu_ns,
            cpu_wait_ns=cpu.wait_ns,
            cpu_slices=cpu.slices,
            withdrawn=withdrawn,
            warmup=warmup,
            histograms=histograms,
        )

    def _take_transactions(self, histograms: dict[str, hdr.Histogram]) -> int:
        """The transactional producers' commit and abort latencies into ``histograms`` and
        their withdrawn messages into the ledger; how many were withdrawn."""
        samples = [p.take_transactions() for p in self._transactional]
        if not samples:
            return 0
        for metric, values in (
            (TRANSACTION_COMMIT, [ns for sample in samples for ns in sample.committed_ns]),
            (TRANSACTION_ABORT, [ns for sample in samples for ns in sample.aborted_ns]),
        ):
            histograms[metric] = hdr.record_ns(metric, np.array(values, np.int64))
        withdrawn = np.array([i for sample in samples for i in sample.withdrawn], np.int64)
        self.ledger.record_withdrawn(withdrawn)
        return len(withdrawn)

    def accounting(self, *, ask_broker: bool = False) -> list[dict[str, object]]:
        """Every worker's :meth:`Ledger.to_json` (here: this one's), for
        :func:`loadgen.engine.accounting.account`."""
        if not ask_broker:
            return [self.ledger.to_json()]
        names = self.ledger.consumer_subscriptions
        unread = unread_by_subscription(self._consumers, names, UNREAD_QUERY_S)
        self._fold_late_deliveries()
        ledger = self.ledger.to_json()
        for entry in ledger["subscriptions"]:
            entry["unread"] = unread.get((entry["topic"], entry["subscription"]))
        return [ledger]

    def _fold_late_deliveries(self) -> None:
        """What the consumers read since the last snapshot (they read on after the drain) is
        received, not unread: it goes into the accounting only, the intervals having ended.
        Read after the broker was asked, it may be counted unread too: the accounting then
        calls that many fewer messages lost (the reads of the milliseconds the question took)."""
        rows = [pairs(each.take().identities) for each in self._consumer_recorders]
        self.ledger.record(rows, np.empty((0, 2), np.int64), self._receipts_taken())

    def _receipts_taken(self) -> dict[Subscription, Receipt]:
        return {name: receipt_of(receipts) for name, receipts in self._receipts.items()}

    @property
    def worker_intervals(self) -> dict[str, list[IntervalStats]]:
        return {}

    def placement(self) -> dict[str, object]:
        return {
            "workers": [WORKER_ID],
            "clockOffsetsMs": {WORKER_ID: 0.0},
            "recorderEngines": {WORKER_ID: ENGINE},
        }

    # -- teardown -------------------------------------------------------------------------------
    def _delete_topics(self) -> None:
        """The run's topics go: the worker that created them deletes them; one that adopted
        them deletes only what it created to consume them (a driver's ``delete_subscriptions``:
        RabbitMQ queues, Pravega reader groups), before the creator deletes the rest."""
        if self._owns_topics:
            delete = self.driver.delete_topics
        else:
            delete = self.driver.delete_subscriptions
        try:
            delete(self.topics)
        except Exception as error:
            log.warning("deleting topics failed: %s", error)

    def _ask_topic_scaling(self) -> None:
        """What the broker made of the topics this worker created, where the driver can say."""
        if not isinstance(self.driver, ScalingTopics):
            return
        try:
            scaling = self.driver.topic_scaling(self.topics)
        except Exception as error:
            log.warning("asking how the topics scaled failed: %s", error)
            return
        self._topic_scaling = [topic.to_json() for topic in scaling]

    def topic_scaling(self) -> list[dict[str, Any]]:
        return self._topic_scaling

    def close(self, *, delete_topics: bool) -> None:
        """Stop everything this worker started; never raises, so a result is never masked."""
        if self._loop is not None:
            self._loop.stop()
        for resource in [*self._producers, *self._consumers]:
            try:
                resource.close()
            except Exception as error:
                log.warning("closing %s failed: %s", type(resource).__name__, error)
        self._producers.clear()
        self._consumers.clear()
        if self._owns_topics and self.topics:
            self._ask_topic_scaling()
        if delete_topics and self.topics:
            self._delete_topics()
        try:
            self.driver.close()
        except Exception as error:
            log.warning("closing the driver failed: %s", error)
