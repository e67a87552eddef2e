"""The in-process broker: the ceiling of the harness and the engine's test double.

Topics are lists of partitions; each partition is a list of entries: payloads the compiled
producer loop stamped (:meth:`MemoryProducer.prefixed_send`: send time, message id and intended
send time in the first 32 bytes, :mod:`loadgen.driver_api.stamp`, read back by the consumer as
Kafka's does), and ``(payload, send_ns, message_id, intended_ns)`` for what ``send`` stores
(payloads shorter than the stamp, probes, every message of a broker set to misbehave and of the
pure-Python loop). Consumers get the partition index back with them. A subscription keeps one
cursor per partition and every subscription sees every message; the consumers of one
subscription split its partitions (partition ``p`` goes to consumer ``p % n``). Sends are
acknowledged at once, on the sender's thread. Consumer threads poll every ``pollIntervalMs`` when
idle, so end-to-end latency here is mostly that interval. A topic with no subscription keeps
nothing; consumed entries are trimmed so memory stays bounded while consumers keep up.

For tests of the engine's accounting the broker can misbehave on purpose (driver YAML keys, all
off by default, counted per producer over messages that carry an id, so probes pass untouched):
``dropEvery: N`` acknowledges every N-th message but never stores it (lost), ``duplicateEvery: N``
stores every N-th twice, ``swapEvery: N`` stores every N-th after the message that follows it
(in that one's partition: one out-of-order delivery per swap), and ``stallMs: X`` with
``stallAfter: M`` blocks the send after the first M messages for X ms, once (a stalled client,
for coordinated-omission checks).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from itertools import cycle
from time import sleep, time_ns
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from loadgen.base.errors import DriverError
from loadgen.driver_api import (
    KEY,
    NO_MESSAGE_ID,
    VALUE,
    BaseDriver,
    OnDone,
    OnMessage,
    PrefixedSend,
    TopicSpec,
    prefixed_deliveries,
)
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.stamp import unpack_prefixed
from loadgen.spec import parse_model

BATCH = 1000
TRIM_AT = 50_000


class MemoryConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    poll_interval_ms: float = Field(default=0.5, alias="pollIntervalMs", gt=0, le=1000)
    """How long an idle consumer thread waits before polling its partitions again, in ms;
    end-to-end latency on this driver is mostly this interval."""
    drop_every: int | None = Field(default=None, alias="dropEvery", ge=1)
    """Fault injection: acknowledge every N-th message of each producer (counting messages with
    an id, not probes) but never store it; unset: off."""
    duplicate_every: int | None = Field(default=None, alias="duplicateEvery", ge=1)
    """Fault injection: store every N-th message of each producer twice; unset: off."""
    swap_every: int | None = Field(default=None, alias="swapEvery", ge=2)
    """Fault injection: store every N-th message of each producer after the one that follows it
    (one out-of-order delivery per swap); unset: off."""
    stall_ms: float = Field(default=0.0, alias="stallMs", ge=0, le=600_000)
    """Fault injection: block one send of each producer this long, in ms, once (a stalled client,
    for coordinated-omission checks); 0: off."""
    stall_after: int = Field(default=0, alias="stallAfter", ge=0)
    """With ``stallMs``: how many messages each producer sends before its stall (0: the first one
    stalls)."""


Entry = tuple[bytes, int, int, int] | bytes
"""``(payload, send_ns, message_id, intended_ns)``, or a payload stamped in its prefix."""


def _every(n: int | None, count: int) -> bool:
    return n is not None and count % n == 0


class _Topic:
    def __init__(self, partitions: int) -> None:
        self.partitions: list[list[Entry]] = [[] for _ in range(partitions)]
        self.subscriptions: dict[str, _Subscription] = {}
        self.lock = threading.Lock()

    def trim(self) -> None:
        """Drop entries every subscription has read; called with ``lock`` held."""
        for p, log in enumerate(self.partitions):
            done = min(sub.cursors[p] for sub in self.subscriptions.values())
            if done >= TRIM_AT:
                del log[:done]
                for sub in self.subscriptions.values():
                    sub.cursors[p] -= done


class _Subscription:
    def __init__(self, partitions: int) -> None:
        self.cursors = [0] * partitions
        self.consumers: list[MemoryConsumer] = []


class MemoryProducer:
    def __init__(self, topic: _Topic, faults: MemoryConfig | None = None) -> None:
        self._topic = topic
        self._next_partition = cycle(topic.partitions)
        self._faults = faults
        self._count = 0
        self._held: tuple[list[Entry], Entry] | None = None

    def send(
        self,
        key: bytes | None,
        payload: bytes,
        on_done: OnDone,
        message_id: int,
        intended_ns: int,
    ) -> None:
        topic = self._topic
        if self._faults is not None and message_id != NO_MESSAGE_ID:
            self._send_faulty(key, payload, message_id, intended_ns)
        elif topic.subscriptions:  # inline: this is the pure-Python loop's per-message path
            if key is None:
                log = next(self._next_partition)
            else:
                log = topic.partitions[hash(key) % len(topic.partitions)]
            log.append((payload, time_ns(), message_id, intended_ns))
        on_done(None)

    def prefixed_send(self) -> PrefixedSend | None:
        """The stamped payload is stored as it is and acknowledged as the store returns; a broker
        set to misbehave counts and alters messages in ``send``, so it takes them all there."""
        return None if self._faults is not None else PrefixedSend(self._store, (VALUE, KEY))

    def _store(self, entry: Entry, key: bytes | None) -> None:
        """Append ``entry`` to ``key``'s partition; a topic with no subscription keeps nothing."""
        if self._topic.subscriptions:
            self._log(key).append(entry)

    def _log(self, key: bytes | None) -> list[Entry]:
        if key is None:
            return next(self._next_partition)
        return self._topic.partitions[hash(key) % len(self._topic.partitions)]

    def _send_faulty(
        self, key: bytes | None, payload: bytes, message_id: int, intended: int
    ) -> None:
        """The configured faults, for the ``self._count``-th message with an id."""
        faults = self._faults
        assert faults is not None
        self._count = count = self._count + 1
        if faults.stall_ms and count == faults.stall_after + 1:
            sleep(faults.stall_ms / 1000)
        if _every(faults.drop_every, count) or not self._topic.subscriptions:
            return
        log, entry = self._log(key), (payload, time_ns(), message_id, intended)
        if _every(faults.swap_every, count):
            self._held = (log, entry)
            return
        log.append(entry)
        if _every(faults.duplicate_every, count):
            log.append(entry)
        if self._held is not None:
            log.append(self._held[1])  # behind a later message of the same partition
            self._held = None

    def poll(self, timeout_s: float = 0.0) -> None:
        """Acknowledgements are immediate: nothing to serve, only the wait."""
        if timeout_s > 0:
            sleep(timeout_s)

    def flush(self, timeout_s: float) -> int:
        """Store a message a swap still holds back (it had no successor to swap with)."""
        if self._held is not None:
            log, entry = self._held
            log.append(entry)
            self._held = None
        return 0

    def close(self) -> None:
        """Nothing to release."""


class MemoryConsumer:
    def __init__(
        self, topic: _Topic, subscription: _Subscription, on_message: OnMessage, poll_s: float
    ) -> None:
        self._topic = topic
        self._subscription = subscription
        self._on_message = on_message
        self._prefixed = prefixed_deliveries(on_message)
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._paused = False
        self._thread = threading.Thread(target=self._run, name="memory-consumer", daemon=True)
        self._thread.start()

    def _assigned(self) -> list[int]:
        members = self._subscription.consumers
        if self not in members:
            return []
        index, count = members.index(self), len(members)
        return [p for p in range(len(self._topic.partitions)) if p % count == index]

    def _take_batch(self, partition: int) -> list[Entry]:
        topic, cursors = self._topic, self._subscription.cursors
        with topic.lock:
            start = cursors[partition]
            batch = topic.partitions[partition][start : start + BATCH]
            cursors[partition] = start + len(batch)
            if cursors[partition] >= TRIM_AT:
                topic.trim()
        return batch

    def _run(self) -> None:
        while not self._stop.is_set():
            delivered = 0
            if not self._paused:
                for partition in self._assigned():
                    batch = self._take_batch(partition)
                    self._deliver(batch, partition)
                    delivered += len(batch)
            if not delivered:
                self._stop.wait(self._poll_s)

    def _deliver(self, batch: list[Entry], partition: int) -> None:
        """Stamped payloads go to the recorder in runs (one C call each, where it reads the
        prefix itself); the rest, one by one, to ``on_message``."""
        on_message, recorder = self._on_message, self._prefixed
        index, end = 0, len(batch)
        while index < end:
            entry = batch[index]
            if type(entry) is not bytes:
                payload, sent_ns, message_id, intended_ns = entry
                on_message(payload, sent_ns, message_id, intended_ns, partition)
            elif (
                recorder is None
                or (reached := recorder.on_prefixed_many(batch, index, partition)) == index
            ):
                _, sent_ns, message_id, intended_ns = unpack_prefixed(entry)
                on_message(entry, sent_ns, message_id, intended_ns, partition)
            else:
                index = reached
                continue
            index += 1

    def pause(self) -> None:
        self._paused = True

    def unread(self, timeout_s: float) -> dict[str, int] | None:
        """What the subscription holds unread in this consumer's partitions, counted once its
        thread has stopped, so each message is either delivered or counted here."""
        self._stop.set()
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            return None
        with self._topic.lock:
            cursors, logs = self._subscription.cursors, self._topic.partitions
            return {str(p): len(logs[p]) - cursors[p] for p in self._assigned()}

    def resume(self) -> None:
        self._paused = False

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        with self._topic.lock:
            if self in self._subscription.consumers:
                self._subscription.consumers.remove(self)


class Driver(BaseDriver):
    """The memory driver (``driver: memory``); the broker lives as long as this object."""

    process_local = True  # each process has a broker of its own
    url_schemes = ("memory",)
    config_model = "loadgen_drivers.memory:MemoryConfig"

    @classmethod
    def config_from_url(cls, url: str, config: Mapping[str, Any]) -> dict[str, Any]:
        """``loadgen run memory://``: there is no address to set."""
        return dict(config)

    def __init__(self, spec: DriverSpec, config: MemoryConfig) -> None:
        self.spec = spec
        self._config = config
        self._topics: dict[str, _Topic] = {}
        injects = config.drop_every or config.duplicate_every or config.swap_every
        self._faults = config if injects or config.stall_ms else None

    @classmethod
    def validate_config(cls, spec: DriverSpec) -> MemoryConfig:
        return parse_model(MemoryConfig, dict(spec.config), file=spec.source, lenient=spec.lenient)

    @classmethod
    def from_config(cls, spec: DriverSpec) -> Driver:
        return cls(spec, cls.validate_config(spec))

    def check_reachable(self, timeout_s: float) -> None:
        """In-process: always reachable."""

    def create_topics(self, topics: list[TopicSpec]) -> None:
        for topic in topics:
            self._topics.setdefault(topic.name, _Topic(topic.partitions))

    adopt_topics = create_topics
    """Another worker's topics exist here only once this process creates its own copy."""

    def delete_topics(self, names: list[str]) -> None:
        for name in names:
            self._topics.pop(name, None)

    def _topic(self, name: str) -> _Topic:
        try:
            return self._topics[name]
        except KeyError:
            raise DriverError("memory", f"topic {name!r} does not exist") from None

    def create_producer(self, topic: str) -> MemoryProducer:
        return MemoryProducer(self._topic(topic), self._faults)

    def create_consumer(
        self, topic: str, subscription: str, on_message: OnMessage
    ) -> MemoryConsumer:
        target = self._topic(topic)
        with target.lock:
            sub = target.subscriptions.setdefault(
                subscription, _Subscription(len(target.partitions))
            )
        consumer = MemoryConsumer(target, sub, on_message, self._config.poll_interval_ms / 1000)
        with target.lock:
            sub.consumers.append(consumer)
        return consumer

    def close(self) -> None:
        self._topics.clear()
