"""The in-process broker: the ceiling of the harness and the engine's test double.

Topics are lists of partitions; each partition is a list of ``(payload, send_ns)``. A
subscription keeps one cursor per partition and every subscription sees every message; the
consumers of one subscription split its partitions (partition ``p`` goes to consumer
``p % n``). Sends are acknowledged at once, on the sender's thread. Consumer threads poll every
``pollIntervalMs`` when idle, so end-to-end latency here is mostly that interval. A topic with no
subscription keeps nothing; consumed entries are trimmed so memory stays bounded while consumers
keep up. The send timestamp travels beside the payload in the partition entry.
"""

from __future__ import annotations

import threading
from itertools import cycle
from time import sleep, time_ns

from pydantic import BaseModel, ConfigDict, Field

from loadgen.driver import OnDone, OnMessage, TopicSpec
from loadgen.errors import DriverError
from loadgen.spec import parse_model
from loadgen.spec.driver_spec import DriverSpec

BATCH = 1000
TRIM_AT = 50_000


class MemoryConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    poll_interval_ms: float = Field(default=0.5, alias="pollIntervalMs", gt=0, le=1000)


class _Topic:
    def __init__(self, partitions: int) -> None:
        self.partitions: list[list[tuple[bytes, int]]] = [[] for _ in range(partitions)]
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
    def __init__(self, topic: _Topic) -> None:
        self._topic = topic
        self._next_partition = cycle(topic.partitions)

    def send(self, key: bytes | None, payload: bytes, on_done: OnDone) -> None:
        topic = self._topic
        if topic.subscriptions:
            if key is None:
                log = next(self._next_partition)
            else:
                log = topic.partitions[hash(key) % len(topic.partitions)]
            log.append((payload, time_ns()))
        on_done(None)

    def poll(self, timeout_s: float = 0.0) -> None:
        """Acknowledgements are immediate: nothing to serve, only the wait."""
        if timeout_s > 0:
            sleep(timeout_s)

    def flush(self, timeout_s: float) -> int:
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

    def _take_batch(self, partition: int) -> list[tuple[bytes, int]]:
        topic, cursors = self._topic, self._subscription.cursors
        with topic.lock:
            start = cursors[partition]
            batch = topic.partitions[partition][start : start + BATCH]
            cursors[partition] = start + len(batch)
            if cursors[partition] >= TRIM_AT:
                topic.trim()
        return batch

    def _run(self) -> None:
        on_message = self._on_message
        while not self._stop.is_set():
            delivered = 0
            if not self._paused:
                for partition in self._assigned():
                    batch = self._take_batch(partition)
                    for payload, sent_ns in batch:
                        on_message(payload, sent_ns)
                    delivered += len(batch)
            if not delivered:
                self._stop.wait(self._poll_s)

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        self._paused = False

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        with self._topic.lock:
            if self in self._subscription.consumers:
                self._subscription.consumers.remove(self)


class Driver:
    """The memory driver (``driver: memory``); the broker lives as long as this object."""

    process_local = True
    """Each process has a broker of its own: a run over several processes must keep every
    topic's producers and consumers in one of them."""

    def __init__(self, spec: DriverSpec, config: MemoryConfig) -> None:
        self.spec = spec
        self._config = config
        self._topics: dict[str, _Topic] = {}

    @classmethod
    def validate_config(cls, spec: DriverSpec) -> MemoryConfig:
        return parse_model(MemoryConfig, dict(spec.config), file=spec.source, lenient=spec.lenient)

    @classmethod
    def from_config(cls, spec: DriverSpec) -> Driver:
        return cls(spec, cls.validate_config(spec))

    @property
    def topic_name_prefix(self) -> str:
        return "test-topic"

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
        return MemoryProducer(self._topic(topic))

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
