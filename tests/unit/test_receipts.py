"""The C engine's receipts (``loadgen.engine._hotpath.Receipts``): the accounting kept as deliveries
come gives the counts the ledger gives from every delivery's id, whatever the order."""

import random
import time

import numpy as np
import pytest

from loadgen.base.hdr_core import END_TO_END
from loadgen.driver_api import NO_MESSAGE_ID
from loadgen.engine.accounting import Ledger, message_id_base
from loadgen.engine.recorder import COMPILED, _hotpath, core_layout, receipt_of

pytestmark = pytest.mark.skipif(not COMPILED, reason="the compiled recorders are not in use")

SUBSCRIPTIONS = [("t", "a"), ("t", "a"), ("t", "b")]
"""Three consumers: two share subscription a, one reads b."""
PARTITIONS = 4


def deliveries(seed: int, per_producer: int) -> list[list[tuple[int, int, int]]]:
    """Intervals of ``(consumer, id, partition)`` deliveries: each consumer reads the
    partitions' messages in order but interleaved at random, one partition sometimes far
    ahead, with ids lost, delivered twice, delivered late, and deliveries without an id."""
    rng = random.Random(seed)
    starts = [rng.choice([0, 1000, 70_000]) for _ in range(3)]  # tailing: from mid-stream on
    events = []
    for consumer in range(len(SUBSCRIPTIONS)):
        queues = [[] for _ in range(PARTITIONS)]
        for producer, start in enumerate(starts):
            for seq in range(start, start + per_producer):
                if rng.random() < 0.02:
                    continue  # lost
                queues[seq % PARTITIONS].append((message_id_base(producer) + seq, seq % PARTITIONS))
        read: list[tuple[int, int]] = []
        while any(queues):
            partition = rng.choice([p for p, queue in enumerate(queues) if queue])
            batch = rng.choice([1, 5, 50, 2000])  # 2000: one partition far ahead of the others
            taken, queues[partition] = queues[partition][:batch], queues[partition][batch:]
            for delivery in taken:
                read.append(delivery)
                if rng.random() < 0.01:
                    read.append(delivery)  # redelivered at once
                if rng.random() < 0.01 and read:
                    read.append(rng.choice(read))  # an earlier one again, late
                if rng.random() < 0.005:
                    read.append((NO_MESSAGE_ID, partition))
        events += [(consumer, message_id, partition) for message_id, partition in read]
    rng.shuffle(events)  # consumers interleave; each one's own order is kept below
    by_consumer = {c: [e for e in events if e[0] == c] for c in range(len(SUBSCRIPTIONS))}
    merged = []
    cursors = dict.fromkeys(by_consumer, 0)
    for consumer, _, _ in events:
        merged.append(by_consumer[consumer][cursors[consumer]])
        cursors[consumer] += 1
    cuts = sorted(rng.sample(range(len(merged)), 5))
    return [merged[a:b] for a, b in zip([0, *cuts], [*cuts, len(merged)], strict=True)]


def ledger() -> Ledger:
    made = Ledger()
    for topic, subscription in SUBSCRIPTIONS:
        made.add_consumer(topic, subscription)
    return made


def by_rows(intervals) -> tuple[Ledger, list]:
    """The reference: every delivery's id handed to the ledger."""
    reference, counts = ledger(), []
    for interval in intervals:
        rows = [
            np.array([(i, p) for c, i, p in interval if c == consumer], np.int64).reshape(-1, 2)
            for consumer in range(len(SUBSCRIPTIONS))
        ]
        counts.append(reference.record(rows, np.empty((0, 2), np.int64)))
    return reference, counts


def by_receipts(intervals, max_words: int) -> tuple[Ledger, list, int]:
    """The C engine: consumers account into their subscription's receipts as they go."""
    accounted, counts = ledger(), []
    receipts = {name: _hotpath.Receipts(max_words=max_words) for name in set(SUBSCRIPTIONS)}
    cores = [_hotpath.ConsumerCore(core_layout(END_TO_END), receipts[n]) for n in SUBSCRIPTIONS]
    unsure = 0
    for interval in intervals:
        for consumer, message_id, partition in interval:
            now = time.time_ns()
            cores[consumer].on_message(b"x", now, message_id, now, partition)
        taken = [core.take() for core in cores]
        assert [t[3] for t in taken] == [b""] * len(cores)  # no identity handed over
        assert sum(t[6] for t in taken) == len(interval)
        received = {name: receipt_of(each) for name, each in receipts.items()}
        unsure += sum(len(r.unsure) for r in received.values())
        empty = [np.empty((0, 2), np.int64)] * len(cores)
        counts.append(accounted.record(empty, np.empty((0, 2), np.int64), received))
    return accounted, counts, unsure


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("max_words", [1, 4, 32768], ids=["64-seqs", "256-seqs", "default"])
def test_receipts_count_what_the_ledger_counts_from_every_delivery(seed, max_words):
    intervals = deliveries(seed, per_producer=3000)
    reference, expected = by_rows(intervals)
    accounted, counts, unsure = by_receipts(intervals, max_words)
    assert counts == expected
    assert accounted.to_json() == reference.to_json()
    found = reference.to_json()["subscriptions"]
    assert all(entry["duplicates"] and entry["outOfOrder"] for entry in found)
    assert reference.unidentified > 0
    if max_words < 32768:
        assert unsure > 0  # small windows dropped gaps: the ledger told those deliveries apart


@pytest.mark.parametrize("batch", [1, 100])
def test_a_tailing_subscription_hands_over_one_range_per_producer_from_a_small_window(batch):
    """16 partitions read a batch at a time from mid-stream on, in a new order every round:
    only deliveries below the first one (partitions lagging it) are left to the ledger, and
    the window keeps its first size."""
    receipts = _hotpath.Receipts()
    core = _hotpath.ConsumerCore(core_layout(END_TO_END), receipts)
    now, start, count = time.time_ns(), 5_000_123, 1_000_000
    queues = [list(range(start + p, start + count, 16)) for p in range(16)]
    rng = random.Random(batch)
    for first in range(0, len(queues[0]), batch):
        for partition in rng.sample(range(16), 16):
            for seq in queues[partition][first : first + batch]:
                core.on_message(b"", now, message_id_base(7) + seq, now, partition)
    received = receipt_of(receipts)
    accounted = Ledger()
    accounted.add_consumer("t", "s")
    counts = accounted.record(
        [np.empty((0, 2), np.int64)], np.empty((0, 2), np.int64), {("t", "s"): received}
    )
    assert (counts.duplicates, counts.out_of_order) == (0, 0)
    entry = accounted.to_json()["subscriptions"][0]
    assert entry["received"] == [message_id_base(7) + start, message_id_base(7) + start + count]
    assert len(received.unsure) < 16 * batch
    assert receipts.window_words == 64  # never grown: its bottom words were all received


def test_forget_drops_what_was_received_and_the_order_seen():
    receipts = _hotpath.Receipts()
    core = _hotpath.ConsumerCore(core_layout(END_TO_END), receipts)
    now = time.time_ns()
    for seq in (5, 3):
        core.on_message(b"", now, seq, now, 0)
    core.take()
    receipts.forget()
    core.forget_order()
    core.on_message(b"", now, 3, now, 0)
    received = receipt_of(receipts)
    assert received.ranges.tolist() == [[3, 4]]
    assert len(received.duplicates) == len(received.late) == 0
