"""Exact loss, duplicate and reorder accounting over message ids, in memory that stays small.

A message id is ``(producer number << 40) | seq`` (:func:`message_id_base`), so one sorted set of
disjoint ``[start, end)`` id ranges holds what a subscription received: in-order delivery keeps
one range per producer however long the run, and only gaps or reordering add ranges. The C
engine tells new ids from duplicates and late deliveries as they arrive and hands ranges over
(:class:`Receipt`); the pure-Python engine hands over every delivery's id, counted once per stats
interval with numpy. Neither does Python work per message.

* duplicates: an id a subscription received more than once (across its consumers, and across
  workers when the coordinator unions every worker's ranges);
* out of order: on one (consumer, producer, partition) stream, a seq lower than the highest seq
  that stream already delivered;
* lost: acknowledged by the broker on the subscription's topic but never received by it, less
  what the broker still holds for the subscription (unread: a backlog not read by the run's end
  is not lost; :mod:`loadgen.engine.unread`);
* aborted read: withdrawn by its producer (its transaction aborted on purpose,
  :class:`loadgen.driver_api.TransactionSample`) and received all the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from loadgen.driver_api import NO_MESSAGE_ID
from loadgen.engine.ack_marks import AckMarks, lost_by_interval, merged_marks

SEQ_BITS = 40
SEQ_MASK = (1 << SEQ_BITS) - 1
PARTITION_LIMIT = SEQ_MASK
"""A delivery's partition is -1 (unknown) or below this, so that ``partition + 1`` fits in the
seq bits of its (producer, partition) stream's key (:class:`OrderTracker`); the recorders raise
``ValueError`` for any other."""


def message_id_base(producer_number: int) -> int:
    """The id of producer ``producer_number``'s first message; its n-th is this plus n."""
    return producer_number << SEQ_BITS


class RangeSet:
    """A set of int64 ids kept as sorted, disjoint, non-adjacent ``[start, end)`` ranges."""

    __slots__ = ("ends", "starts")

    def __init__(self, starts: np.ndarray | None = None, ends: np.ndarray | None = None) -> None:
        self.starts = np.empty(0, np.int64) if starts is None else starts
        self.ends = np.empty(0, np.int64) if ends is None else ends

    @classmethod
    def of_ids(cls, ids: np.ndarray) -> RangeSet:
        """The set of ``ids`` (sorted, unique)."""
        if not len(ids):
            return cls()
        breaks = np.flatnonzero(np.diff(ids) != 1) + 1
        starts = ids[np.concatenate(([0], breaks))]
        ends = ids[np.concatenate((breaks - 1, [len(ids) - 1]))] + 1
        return cls(starts, ends)

    def __len__(self) -> int:
        return int((self.ends - self.starts).sum())

    def contains(self, ids: np.ndarray) -> np.ndarray:
        """Which of ``ids`` are in the set (a boolean mask)."""
        after = np.searchsorted(self.ends, ids, side="right")  # the first range ending above
        return np.append(self.starts, np.iinfo(np.int64).max)[after] <= ids

    def minus(self, other: RangeSet) -> RangeSet:
        """The ids of this set that are not in ``other``."""
        if not len(self.starts) or not len(other.starts):
            return self
        cuts = np.concatenate((self.starts, self.ends, other.starts, other.ends))
        edges = np.unique(cuts)
        lows, highs = edges[:-1], edges[1:]
        inside = self.contains(lows) & ~other.contains(lows)
        return RangeSet().union(RangeSet(lows[inside], highs[inside]))

    def union(self, *others: RangeSet) -> RangeSet:
        sets = [self, *others]
        starts = np.concatenate([s.starts for s in sets])
        ends = np.concatenate([s.ends for s in sets])
        if not len(starts):
            return RangeSet()
        order = np.argsort(starts, kind="stable")
        starts, ends = starts[order], ends[order]
        reach = np.maximum.accumulate(ends)
        new = np.concatenate(([True], starts[1:] > reach[:-1]))
        group_ends = np.concatenate((np.flatnonzero(new)[1:] - 1, [len(starts) - 1]))
        return RangeSet(starts[new], reach[group_ends])

    def to_json(self) -> list[int]:
        """``[start0, end0, start1, end1, ...]``: compact, and one pair per in-order producer."""
        return np.column_stack((self.starts, self.ends)).ravel().tolist()

    @classmethod
    def from_json(cls, flat: Sequence[int]) -> RangeSet:
        pairs = np.asarray(flat, dtype=np.int64).reshape(-1, 2)
        return cls(pairs[:, 0].copy(), pairs[:, 1].copy())


def _firsts(ordered: np.ndarray) -> np.ndarray:
    """Where each run of equal values of sorted ``ordered`` begins (a boolean mask).

    With :func:`numpy.sort` this replaces :func:`numpy.unique`, which (hash-based since
    numpy 2.3) takes 50 times longer on a million ids.
    """
    return np.concatenate(([True], ordered[1:] != ordered[:-1])) if len(ordered) else ordered > 0


def _partition_counts(partitions: np.ndarray) -> dict[int, int]:
    ordered = np.sort(partitions)
    starts = np.flatnonzero(_firsts(ordered))
    counts = np.diff(np.append(starts, len(ordered)))
    return {int(p): int(c) for p, c in zip(ordered[starts], counts, strict=True)}


def _add_counts(into: dict[int, int], more: dict[int, int]) -> None:
    for key, count in more.items():
        into[key] = into.get(key, 0) + count


class OrderTracker:
    """The highest seq each (producer, partition) stream of one consumer has delivered."""

    __slots__ = ("highest", "keys")

    def __init__(self) -> None:
        self.keys = np.empty(0, np.int64)
        """Stream keys, sorted: ``(producer << 40) | (partition + 1)``."""
        self.highest = np.empty(0, np.int64)

    def out_of_order(self, ids: np.ndarray, partitions: np.ndarray) -> np.ndarray:
        """The partitions of the deliveries (in arrival order) that came out of order."""
        if not len(ids):
            return np.empty(0, np.int64)
        stream = (ids & ~SEQ_MASK) | (partitions + 1)
        # each stream's highest seq so far goes first, so it bounds the interval's deliveries
        keys = np.concatenate((self.keys, stream))
        seqs = np.concatenate((self.highest, ids & SEQ_MASK))
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        first = _firsts(ordered)
        starts = np.flatnonzero(first)
        lengths = np.diff(np.append(starts, len(ordered)))
        # the stream's rank above the seq keeps one running maximum from leaking into the next
        ranked = np.repeat(np.arange(len(starts), dtype=np.int64) << SEQ_BITS, lengths)
        ranked |= seqs[order]
        reach = np.maximum.accumulate(ranked)
        late = np.concatenate(([False], ranked[1:] < reach[:-1]))
        self.keys, self.highest = ordered[starts], reach[starts + lengths - 1] & SEQ_MASK
        return (ordered[late] & SEQ_MASK) - 1


@dataclass
class SubscriptionLedger:
    """What one subscription's consumers on one worker received."""

    received: RangeSet = field(default_factory=RangeSet)
    duplicates: int = 0
    out_of_order: int = 0
    by_partition: dict[int, list[int]] = field(default_factory=dict)
    """partition → [duplicates, out of order], only partitions where either happened."""

    def add_duplicates(self, partitions: np.ndarray) -> int:
        """Count deliveries (by their partitions) as duplicates; how many."""
        self.duplicates += len(partitions)
        self._note(partitions, 0)
        return len(partitions)

    def add_out_of_order(self, partitions: np.ndarray) -> int:
        """Count deliveries (by their partitions) as out of order; how many."""
        self.out_of_order += len(partitions)
        self._note(partitions, 1)
        return len(partitions)

    def _note(self, partitions: np.ndarray, column: int) -> None:
        for partition, count in _partition_counts(partitions).items():
            self.by_partition.setdefault(partition, [0, 0])[column] += count


@dataclass(frozen=True)
class Receipt:
    """What one subscription's consumers received in an interval, accounted as it came (the C
    engine's ``loadgen.engine._hotpath.Receipts``, which keeps the subscription's received ids per
    producer in a window of bits)."""

    ranges: np.ndarray
    """``[start, end)`` rows: the ids new to the subscription."""
    duplicates: np.ndarray
    """The partition of each delivery of an id received before."""
    late: np.ndarray
    """The partition of each delivery a consumer got out of order."""
    unsure: np.ndarray
    """``(id, partition)`` rows of deliveries below a window, which the ledger checks."""
    unidentified: int


@dataclass(frozen=True)
class IntervalCounts:
    duplicates: int = 0
    out_of_order: int = 0


class Ledger:
    """One worker's accounting: received ranges per subscription, acknowledged ids per topic.

    ``consumers`` and ``producers`` name what each recorder index belongs to: a consumer's
    ``(topic, subscription)``, a producer number's topic.
    """

    def __init__(self) -> None:
        self.subscriptions: dict[tuple[str, str], SubscriptionLedger] = {}
        self._orders: list[OrderTracker] = []
        self.consumer_subscriptions: list[tuple[str, str]] = []
        """Each consumer's ``(topic, subscription)``, in creation order."""
        self._producer_topics: dict[int, str] = {}
        self.acked: dict[str, RangeSet] = {}
        self.withdrawn: dict[str, RangeSet] = {}
        """Per topic, the ids of messages in transactions aborted on purpose."""
        self.ack_marks = AckMarks()
        self.unidentified = 0
        """Received messages that carried no id: while any did, the run cannot account."""

    def add_consumer(self, topic: str, subscription: str) -> None:
        self.consumer_subscriptions.append((topic, subscription))
        self._orders.append(OrderTracker())
        self.subscriptions.setdefault((topic, subscription), SubscriptionLedger())

    def add_producer(self, number: int, topic: str) -> None:
        self._producer_topics[number] = topic
        self.acked.setdefault(topic, RangeSet())

    def record(
        self,
        deliveries: Sequence[np.ndarray],
        acked_runs: np.ndarray,
        receipts: Mapping[tuple[str, str], Receipt] | None = None,
    ) -> IntervalCounts:
        """Fold one interval in: per consumer (in creation order) its ``(id, partition)`` rows
        in arrival order, the ids acknowledged to this worker's producers as ``(first id,
        count)`` rows of consecutive ids
        (:attr:`loadgen.engine.recorder.ProducerSample.acked_runs`),
        and per subscription what was accounted as it came (:class:`Receipt`)."""
        self._record_acks(acked_runs)
        by_subscription: dict[tuple[str, str], list[np.ndarray]] = {}
        out_of_order = found = 0
        for name, receipt in (receipts or {}).items():
            ledger = self.subscriptions[name]
            self.unidentified += receipt.unidentified
            out_of_order += ledger.add_out_of_order(receipt.late)
            found += ledger.add_duplicates(receipt.duplicates)
            # new to the subscription by construction; the unsure rows are checked against them
            ranges = RangeSet(receipt.ranges[:, 0], receipt.ranges[:, 1])
            ledger.received = ledger.received.union(ranges)
            if len(receipt.unsure):
                by_subscription[name] = [receipt.unsure]
        for index, rows in enumerate(deliveries):
            known = rows[:, 0] != NO_MESSAGE_ID
            identified = rows if known.all() else rows[known]
            self.unidentified += len(rows) - len(identified)
            if not len(identified):
                continue
            name = self.consumer_subscriptions[index]
            late = self._orders[index].out_of_order(identified[:, 0], identified[:, 1])
            out_of_order += self.subscriptions[name].add_out_of_order(late)
            by_subscription.setdefault(name, []).append(identified)
        duplicates = found + sum(
            self._record_received(self.subscriptions[name], np.concatenate(parts))
            for name, parts in by_subscription.items()
        )
        return IntervalCounts(duplicates, out_of_order)

    def _record_acks(self, acked_runs: np.ndarray) -> None:
        firsts, counts = acked_runs[:, 0], acked_runs[:, 1]
        ranges = RangeSet().union(RangeSet(firsts, firsts + counts))
        self._deal(self.acked, ranges)
        numbers = ranges.starts >> SEQ_BITS
        for number in set(numbers.tolist()):
            self.ack_marks.acknowledged(number, int(ranges.ends[numbers == number].max()) - 1)

    def record_withdrawn(self, ids: np.ndarray) -> None:
        """Messages their producers took back (any order)."""
        if len(ids):
            self._deal(self.withdrawn, RangeSet.of_ids(np.unique(ids)))

    def _deal(self, into: dict[str, RangeSet], ranges: RangeSet) -> None:
        """Ranges never span two producers (a producer would need 2**40 messages), so ranges
        of ids are dealt to topics by the producer in their start."""
        numbers = ranges.starts >> SEQ_BITS
        for number in set(numbers.tolist()):
            topic = self._producer_topics[number]
            mine = numbers == number
            into[topic] = into.get(topic, RangeSet()).union(
                RangeSet(ranges.starts[mine], ranges.ends[mine])
            )

    @staticmethod
    def _record_received(ledger: SubscriptionLedger, rows: np.ndarray) -> int:
        order = np.argsort(rows[:, 0], kind="stable")
        ids, partitions = rows[order, 0], rows[order, 1]
        first = np.concatenate(([True], ids[1:] != ids[:-1]))
        repeated = ~first
        repeated[first] = ledger.received.contains(ids[first])
        count = ledger.add_duplicates(partitions[repeated])
        ledger.received = ledger.received.union(RangeSet.of_ids(ids[first]))
        return count

    def to_json(self) -> dict[str, Any]:
        """What the coordinator unions across workers (:func:`account`)."""
        return {
            "subscriptions": [
                {
                    "topic": topic,
                    "subscription": subscription,
                    "received": ledger.received.to_json(),
                    "duplicates": ledger.duplicates,
                    "outOfOrder": ledger.out_of_order,
                    "partitions": {str(p): c for p, c in sorted(ledger.by_partition.items())},
                }
                for (topic, subscription), ledger in self.subscriptions.items()
            ],
            "acked": {topic: ranges.to_json() for topic, ranges in self.acked.items()},
            "withdrawn": {topic: ranges.to_json() for topic, ranges in self.withdrawn.items()},
            "ackMarks": self.ack_marks.to_json(),
            "unidentified": self.unidentified,
        }


@dataclass(frozen=True)
class Accounting:
    """The run's counts; ``lost`` is ``None`` when the run ended before its drain, ``unread``
    when no broker said what it still held."""

    duplicates: int
    out_of_order: int
    lost: int | None
    subscriptions: list[dict[str, Any]]
    unread: int | None = None
    aborted_read: int = 0
    """Messages of transactions aborted on purpose that a subscription read all the same."""
    lost_at: dict[int, int] = field(default_factory=dict)
    """Lost messages (summed over subscriptions) by the end, epoch ms, of the stats interval
    whose end saw them acknowledged (:mod:`loadgen.engine.ack_marks`)."""

    @property
    def loss_detected(self) -> bool:
        return bool(self.lost) or self.duplicates > 0 or self.aborted_read > 0


def account(ledgers: Iterable[dict[str, Any]], *, drained: bool) -> Accounting | None:
    """Union every worker's :meth:`Ledger.to_json`; ``None`` when a message carried no id, or
    when the run had no producers (a consumer-only run reads what others wrote)."""
    parts = list(ledgers)
    if not any(part["acked"] for part in parts) or any(part["unidentified"] for part in parts):
        return None
    acked: dict[str, list[RangeSet]] = {}
    withdrawn: dict[str, list[RangeSet]] = {}
    received: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for part in parts:
        for topic, flat in part["acked"].items():
            acked.setdefault(topic, []).append(RangeSet.from_json(flat))
        for topic, flat in part.get("withdrawn", {}).items():  # absent before transactions
            withdrawn.setdefault(topic, []).append(RangeSet.from_json(flat))
        for entry in part["subscriptions"]:
            received.setdefault((entry["topic"], entry["subscription"]), []).append(entry)
    marks = merged_marks(part.get("ackMarks", ()) for part in parts)  # absent before faults
    lost_at: dict[int, int] = {}
    rows = []
    for (topic, subscription), entries in received.items():
        sets = [RangeSet.from_json(entry["received"]) for entry in entries]
        union = RangeSet().union(*sets)
        across_workers = sum(len(s) for s in sets) - len(union)
        by_partition: dict[int, int] = {}
        late: dict[int, int] = {}
        for entry in entries:
            _add_counts(by_partition, {int(p): c[0] for p, c in entry["partitions"].items()})
            _add_counts(late, {int(p): c[1] for p, c in entry["partitions"].items()})
        sent = RangeSet().union(*acked.get(topic, []))
        missing = len(sent.union(union)) - len(union)
        if drained and missing:
            gone = sent.minus(union)
            numbers = (gone.starts >> SEQ_BITS).tolist()
            ranges = zip(numbers, gone.starts.tolist(), gone.ends.tolist(), strict=True)
            for end_ms, count in lost_by_interval(ranges, marks).items():
                lost_at[end_ms] = lost_at.get(end_ms, 0) + count
        taken_back = RangeSet().union(*withdrawn.get(topic, []))
        aborted_read = len(taken_back) + len(union) - len(taken_back.union(union))
        unread = _unread(entries) if drained else None
        if unread is not None:
            unread = min(unread, missing)
        rows.append(
            {
                "topic": topic,
                "subscription": subscription,
                "duplicates": sum(e["duplicates"] for e in entries) + across_workers,
                "outOfOrder": sum(e["outOfOrder"] for e in entries),
                "lost": missing - (unread or 0) if drained else None,
                "unread": unread,
                "abortedRead": aborted_read,
                "partitions": {
                    str(p): {"duplicates": by_partition.get(p, 0), "outOfOrder": late.get(p, 0)}
                    for p in sorted(by_partition.keys() | late.keys())
                    if by_partition.get(p) or late.get(p)
                },
            }
        )
    return Accounting(
        duplicates=sum(r["duplicates"] for r in rows),
        out_of_order=sum(r["outOfOrder"] for r in rows),
        lost=sum(r["lost"] for r in rows) if drained else None,
        subscriptions=rows,
        unread=None
        if all(r["unread"] is None for r in rows)
        else sum(r["unread"] or 0 for r in rows),
        aborted_read=sum(r["abortedRead"] for r in rows),
        lost_at=lost_at,
    )


def _unread(entries: list[dict[str, Any]]) -> int | None:
    """What the broker still held for one subscription, from every worker's counts by partition
    or queue (two workers counting one queue count it once); ``None`` if one could not say."""
    merged: dict[str, int] = {}
    for entry in entries:
        counts = entry.get("unread")
        if counts is None:
            return None
        for key, count in counts.items():
            merged[key] = max(merged.get(key, 0), count)
    return sum(merged.values())
