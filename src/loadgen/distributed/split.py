"""Who runs what: producers, consumers and the publish rate dealt over N workers.

Two rules. ``omb`` is OMB's: the first ``N // 2`` workers produce and the rest
consume, producers and consumers dealt round-robin, the rate split evenly over the producer
workers that got a producer — except that a run without consumers lets every worker produce
(OMB reserves half the workers for consumers even then). ``topics`` gives each worker whole
topics with their producers and consumers, the rate split by producer count: the only split an
in-process broker (the memory driver) can run, and one in which producer and consumer of a
message share a host clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from loadgen.engine.plan import Subscription

OMB = "omb"
BY_TOPIC = "topics"
SPLITS = (OMB, BY_TOPIC)


@dataclass(frozen=True)
class Assignment:
    """One worker's share of a run."""

    producers: tuple[str, ...] = ()
    """The topic of each of its producers."""
    consumers: tuple[Subscription, ...] = ()
    rate_share: float = 0.0
    """Its fraction of the publish rate."""

    @property
    def role(self) -> str:
        """``producer``, ``consumer``, ``producer+consumer`` or ``idle``."""
        named = (("producer", self.producers), ("consumer", self.consumers))
        return "+".join(name for name, items in named if items) or "idle"


def deal(items: Sequence, buckets: int) -> list[list]:
    """Round-robin: item ``i`` into bucket ``i mod buckets`` (OMB's ``partitionList``)."""
    dealt: list[list] = [[] for _ in range(buckets)]
    for index, item in enumerate(items):
        dealt[index % buckets].append(item)
    return dealt


def producer_worker_count(workers: int) -> int:
    """OMB's number of producer workers without ``--extra``: ``N // 2`` (at least one)."""
    return max(1, workers // 2)


def split_omb(
    workers: int, topics: Sequence[str], producers: Sequence[str], consumers: Sequence[Subscription]
) -> list[Assignment]:
    """OMB's split; worker 0 (the leader) is always a producer worker."""
    if workers == 1:
        return [Assignment(tuple(producers), tuple(consumers), 1.0 if producers else 0.0)]
    if not consumers:
        return _even_rates(deal(producers, workers), [[] for _ in range(workers)])
    producing = producer_worker_count(workers)
    # OMB reverses the list and chunks it: consumers are the last N-P workers, reversed
    consumer_order = list(range(workers - 1, producing - 1, -1))
    producer_order = list(range(producing - 1, -1, -1))
    by_worker_producers: list[list] = [[] for _ in range(workers)]
    by_worker_consumers: list[list] = [[] for _ in range(workers)]
    for position, bucket in zip(producer_order, deal(producers, producing), strict=True):
        by_worker_producers[position] = bucket
    for position, bucket in zip(consumer_order, deal(consumers, workers - producing), strict=True):
        by_worker_consumers[position] = bucket
    return _even_rates(by_worker_producers, by_worker_consumers)


def split_by_topic(
    workers: int, topics: Sequence[str], producers: Sequence[str], consumers: Sequence[Subscription]
) -> list[Assignment]:
    """Whole topics per worker: ``topics[t]`` and its producers and consumers on worker
    ``t mod N``."""
    home = {topic: index % workers for index, topic in enumerate(topics)}
    by_worker_producers: list[list] = [[] for _ in range(workers)]
    by_worker_consumers: list[list] = [[] for _ in range(workers)]
    for topic in producers:
        by_worker_producers[home[topic]].append(topic)
    for subscription in consumers:
        by_worker_consumers[home[subscription[0]]].append(subscription)
    total = len(producers)
    return [
        Assignment(tuple(mine), tuple(theirs), len(mine) / total if total else 0.0)
        for mine, theirs in zip(by_worker_producers, by_worker_consumers, strict=True)
    ]


def _even_rates(producers: list[list], consumers: list[list]) -> list[Assignment]:
    """OMB's even rate split over the workers that got at least one producer."""
    used = sum(1 for bucket in producers if bucket)
    return [
        Assignment(tuple(mine), tuple(theirs), 1 / used if mine else 0.0)
        for mine, theirs in zip(producers, consumers, strict=True)
    ]


def split(
    rule: str,
    workers: int,
    topics: Sequence[str],
    producers: Sequence[str],
    consumers: Sequence[Subscription],
) -> list[Assignment]:
    """``producers`` and ``consumers`` (one entry each, see :mod:`loadgen.engine.plan`) of
    ``topics`` over ``workers`` by ``rule`` (:data:`OMB` or :data:`BY_TOPIC`).

    Where the consumers go does not depend on the producers, so consumers can be placed (and
    created) before the producers are known, as the lifecycle needs."""
    chosen = split_omb if rule == OMB else split_by_topic
    return chosen(workers, topics, producers, consumers)


def workers_needed(rule: str, workers: int, topics: int) -> int:
    """How many of ``workers`` a run can use: by topic, no more than there are topics."""
    return min(workers, topics) if rule == BY_TOPIC else workers
