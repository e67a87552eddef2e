"""Loss, duplicate and reorder accounting over message ids: exact counts, bounded memory."""

import json
from array import array

import numpy as np

from loadgen.driver_api import NO_MESSAGE_ID
from loadgen.engine.accounting import Ledger, OrderTracker, RangeSet, account, message_id_base
from loadgen.engine.recorder import pairs, runs_of

P0, P1 = message_id_base(0), message_id_base(1)


def ids(*values):
    return np.array(values, dtype=np.int64)


def acked(*values):
    """Acknowledged ids as the recorders hand them over: ``(first id, count)`` runs."""
    return pairs(runs_of(array("q", values)))


def rows(id_values, partition=0):
    """``(id, partition)`` rows in arrival order."""
    return np.column_stack((ids(*id_values), np.full(len(id_values), partition, np.int64)))


def test_range_set_keeps_runs_as_ranges_and_unions_them():
    first = RangeSet.of_ids(ids(1, 2, 3, 7, 8))
    assert (list(first.starts), list(first.ends)) == ([1, 7], [4, 9])
    merged = first.union(RangeSet.of_ids(ids(4, 5, 6, 20)))
    assert (list(merged.starts), list(merged.ends)) == ([1, 20], [9, 21])
    assert len(merged) == 9
    assert list(merged.contains(ids(0, 1, 8, 9, 20, 21))) == [False, True, True, False, True, False]
    assert RangeSet.from_json(json.loads(json.dumps(merged.to_json()))).to_json() == [1, 9, 20, 21]


def test_order_tracker_counts_a_lower_seq_after_a_higher_one_per_stream():
    tracker = OrderTracker()
    # partition 0: 0 1 3 2 -> 2 is late; partition 1 is its own stream: 0 after 3 of p0 is fine
    late = tracker.out_of_order(ids(P0, P0 + 1, P0 + 3, P0 + 2, P0), ids(0, 0, 0, 0, 1))
    assert list(late) == [0]
    # the highest seq carries over to the next interval; a repeat of the highest is not late
    late = tracker.out_of_order(ids(P0 + 3, P0 + 1, P1, P0 + 4), ids(0, 0, 0, 0))
    assert list(late) == [0]
    assert list(tracker.highest) == [4, 0, 0]  # (p0, part 0), (p0, part 1), (p1, part 0)


def test_duplicates_count_across_consumers_and_intervals_of_one_subscription_only():
    ledger = Ledger()
    ledger.add_producer(0, "t")
    for _ in range(2):
        ledger.add_consumer("t", "a")  # two consumers share subscription a
    ledger.add_consumer("t", "b")
    first = ledger.record(
        [rows([P0, P0 + 1]), rows([P0 + 1, P0 + 2], 1), rows([P0, P0 + 1, P0 + 2])],
        acked(P0, P0 + 1, P0 + 2, P0 + 3),
    )
    assert first.duplicates == 1  # P0+1 reached both consumers of a; b got each once
    second = ledger.record([rows([P0 + 2, P0 + 2]), rows([]), rows([P0 + 3])], acked())
    assert second.duplicates == 2
    result = account([ledger.to_json()], drained=True)
    by_name = {row["subscription"]: row for row in result.subscriptions}
    assert (by_name["a"]["duplicates"], by_name["b"]["duplicates"]) == (3, 0)
    assert (by_name["a"]["lost"], by_name["b"]["lost"]) == (1, 0)  # a never got P0+3
    assert by_name["a"]["partitions"] == {
        "0": {"duplicates": 2, "outOfOrder": 0},
        "1": {"duplicates": 1, "outOfOrder": 0},
    }
    assert (result.duplicates, result.lost, result.out_of_order) == (3, 1, 0)
    assert result.loss_detected


def test_a_failed_send_is_not_lost_and_a_topic_counts_only_its_own_producers():
    ledger = Ledger()
    ledger.add_producer(0, "t")
    ledger.add_producer(1, "u")
    ledger.add_consumer("t", "s")
    # P0+1 was never acknowledged (its send failed): not lost; u's messages are not t's
    ledger.record([rows([P0, P0 + 2])], acked(P0, P0 + 2, P1, P1 + 1))
    result = account([ledger.to_json()], drained=True)
    assert (result.lost, result.duplicates) == (0, 0)
    assert result.subscriptions[0]["partitions"] == {}
    assert not result.loss_detected


def test_ranges_of_two_workers_are_unioned_for_duplicates_and_loss():
    producer, consumer = Ledger(), Ledger()
    producer.add_producer(0, "t")
    producer.record([], acked(*range(P0, P0 + 10)))
    halves = [Ledger(), Ledger()]
    for ledger in halves:
        ledger.add_consumer("t", "s")
    halves[0].record([rows(range(P0, P0 + 6))], acked())
    halves[1].record([rows(range(P0 + 4, P0 + 9))], acked())
    parts = [producer.to_json(), consumer.to_json(), *(h.to_json() for h in halves)]
    result = account(json.loads(json.dumps(parts)), drained=True)
    assert (result.duplicates, result.lost) == (2, 1)  # P0+4, P0+5 twice; P0+9 never


def test_no_account_without_ids_and_no_loss_without_a_drain():
    ledger = Ledger()
    ledger.add_producer(0, "t")
    ledger.add_consumer("t", "s")
    ledger.record([rows([P0])], acked(P0, P0 + 1))
    assert account([ledger.to_json()], drained=False).lost is None
    ledger.record([rows([NO_MESSAGE_ID])], acked())
    assert account([ledger.to_json()], drained=True) is None
    reader = Ledger()  # a consumer-only run: what it reads was sent by others
    reader.add_consumer("t", "s")
    reader.record([rows([P0])], acked())
    assert account([reader.to_json()], drained=True) is None


def test_in_order_delivery_keeps_one_range_per_producer_however_many_messages():
    ledger = Ledger()
    for number in range(2):
        ledger.add_producer(number, "t")
    ledger.add_consumer("t", "s")
    for start in range(0, 1_000_000, 100_000):
        both = np.concatenate([np.arange(start, start + 100_000) + base for base in (P0, P1)])
        deliveries = np.column_stack((both, both % 4))
        counts = ledger.record([deliveries], acked(*both.tolist()))
        assert (counts.duplicates, counts.out_of_order) == (0, 0)
    document = ledger.to_json()
    assert document["subscriptions"][0]["received"] == [P0, P0 + 1_000_000, P1, P1 + 1_000_000]
    assert document["acked"]["t"] == [P0, P0 + 1_000_000, P1, P1 + 1_000_000]
    assert account([document], drained=True).lost == 0


def test_what_the_broker_still_holds_is_unread_not_lost():
    def worker(received, unread):
        ledger = Ledger()
        ledger.add_consumer("t", "s")
        ledger.record([rows(received)], acked())
        part = ledger.to_json()
        part["subscriptions"][0]["unread"] = unread
        return part

    producer = Ledger()
    producer.add_producer(0, "t")
    producer.record([], acked(*range(P0, P0 + 10)))
    # two workers count the same queue "q" (once) and partitions of their own; 7 are missing
    parts = [
        producer.to_json(),
        worker(range(P0, P0 + 2), {"q": 3, "0": 1}),
        worker(range(P0 + 2, P0 + 3), {"q": 3, "1": 1}),
    ]
    result = account(parts, drained=True)
    assert (result.unread, result.lost) == (5, 2)
    assert result.subscriptions[0]["unread"] == 5
    parts[1]["subscriptions"][0]["unread"] = {"q": 30}  # more than is missing: all unread
    assert (account(parts, drained=True).unread, account(parts, drained=True).lost) == (7, 0)
    parts[2]["subscriptions"][0]["unread"] = None  # one worker's broker did not answer
    assert (account(parts, drained=True).unread, account(parts, drained=True).lost) == (None, 7)
    assert account(parts, drained=False).unread is None


def test_withdrawn_messages_a_subscription_read_are_counted_aborted_read_not_lost():
    ledger = Ledger()
    ledger.add_producer(0, "t")
    ledger.add_consumer("t", "s")
    ledger.record([rows([P0, P0 + 1, P0 + 5])], acked(P0, P0 + 1, P0 + 2))
    ledger.record_withdrawn(ids(P0 + 6, P0 + 5, P0 + 4))  # any order
    result = account(json.loads(json.dumps([ledger.to_json()])), drained=True)
    assert (result.aborted_read, result.lost) == (1, 1)  # P0 + 5 read; P0 + 2 never came
    assert result.subscriptions[0]["abortedRead"] == 1 and result.loss_detected


def test_a_ledger_from_before_transactions_reads_as_nothing_withdrawn():
    ledger = Ledger()
    ledger.add_producer(0, "t")
    ledger.add_consumer("t", "s")
    ledger.record([rows([P0])], acked(P0))
    part = ledger.to_json()
    del part["withdrawn"]
    result = account([part], drained=True)
    assert (result.aborted_read, result.lost, result.loss_detected) == (0, 0, False)


def test_range_set_minus_keeps_what_the_other_lacks():
    whole = RangeSet.of_ids(ids(*range(0, 10), *range(20, 25)))
    taken = RangeSet.of_ids(ids(2, 3, 7, 21, 22, 23, 24, 30))
    left = whole.minus(taken)
    assert left.to_json() == [0, 2, 4, 7, 8, 10, 20, 21]
    assert whole.minus(RangeSet()).to_json() == whole.to_json()


def test_a_lost_message_is_put_in_the_interval_that_acknowledged_it():
    ledger = Ledger()
    ledger.add_producer(0, "t")
    ledger.add_producer(1, "t")
    ledger.add_consumer("t", "s")
    ledger.record([rows([P0, P0 + 1])], acked(P0, P0 + 1, P0 + 2, P1))  # P0 + 2 never read
    ledger.ack_marks.interval_ended(1000)
    ledger.record([rows([P0 + 3, P1])], acked(P0 + 3, P0 + 4, P0 + 5, P1 + 1))  # P0+4, +5, P1+1
    ledger.ack_marks.interval_ended(2000)
    result = account(json.loads(json.dumps([ledger.to_json()])), drained=True)
    assert result.lost == 4 and result.lost_at == {1000: 1, 2000: 3}
