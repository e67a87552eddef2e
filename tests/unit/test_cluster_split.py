"""How producers, consumers and the rate are dealt over workers (OMB's rule, and by topic)."""

import pytest

from loadgen.distributed.split import BY_TOPIC, OMB, producer_worker_count, split, workers_needed
from loadgen.engine.plan import consumer_subscriptions, producer_topics

TOPICS = ["t0", "t1", "t2"]


@pytest.mark.parametrize(
    ("workers", "producing"), [(2, 1), (3, 1), (4, 2), (5, 2), (6, 3), (7, 3), (8, 4), (9, 4)]
)
def test_producer_worker_count_is_omb_table_without_extra(workers, producing):
    assert producer_worker_count(workers) == producing


def test_omb_split_of_four_workers_puts_consumers_on_the_last_two_reversed():
    producers = producer_topics(TOPICS, 2)  # 6 producers
    consumers = [(topic, "s") for topic in TOPICS for _ in range(2)]  # 6 consumers
    placed = split(OMB, 4, TOPICS, producers, consumers)
    # OMB: reversed list chunked by N-P=2 -> consumers [w3, w2], producers [w1, w0];
    # the round-robin deal gives bucket 0 to the first of each chunk
    assert placed[1].producers == ("t0", "t2", "t1")
    assert placed[0].producers == ("t1", "t0", "t2")
    assert placed[3].consumers == (("t0", "s"), ("t1", "s"), ("t2", "s"))
    assert placed[2].consumers == (("t0", "s"), ("t1", "s"), ("t2", "s"))
    assert [a.role for a in placed] == ["producer", "producer", "consumer", "consumer"]
    assert [a.rate_share for a in placed] == [0.5, 0.5, 0.0, 0.0]


def test_omb_rate_is_split_over_the_producer_workers_that_got_a_producer():
    placed = split(OMB, 6, TOPICS, ["t0"], [("t0", "s")])  # 3 producer workers, 1 producer
    assert [a.rate_share for a in placed] == [0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    assert sum(len(a.consumers) for a in placed) == 1


def test_a_run_without_consumers_produces_on_every_worker():
    placed = split(OMB, 3, TOPICS, producer_topics(TOPICS, 1), [])
    assert [a.producers for a in placed] == [("t0",), ("t1",), ("t2",)]
    assert [round(a.rate_share, 6) for a in placed] == [0.333333] * 3


def test_one_worker_runs_everything():
    consumers = consumer_subscriptions(TOPICS, 2, 1)
    [only] = split(OMB, 1, TOPICS, producer_topics(TOPICS, 1), consumers)
    assert only.role == "producer+consumer"
    assert len(only.consumers) == 6 and only.rate_share == 1.0


def test_consumer_placement_does_not_depend_on_the_producers():
    consumers = consumer_subscriptions(TOPICS, 2, 2)
    for rule in (OMB, BY_TOPIC):
        before = [a.consumers for a in split(rule, 3, TOPICS, [], consumers)]
        after = [a.consumers for a in split(rule, 3, TOPICS, producer_topics(TOPICS, 2), consumers)]
        assert before == after


def test_by_topic_keeps_each_topic_with_its_producers_and_consumers_on_one_worker():
    producers = producer_topics(TOPICS, 2)
    consumers = consumer_subscriptions(TOPICS, 1, 2)
    placed = split(BY_TOPIC, 2, TOPICS, producers, consumers)
    assert placed[0].producers == ("t0", "t2", "t0", "t2")
    assert placed[1].producers == ("t1", "t1")
    assert {topic for topic, _ in placed[0].consumers} == {"t0", "t2"}
    assert {topic for topic, _ in placed[1].consumers} == {"t1"}
    assert [a.rate_share for a in placed] == [4 / 6, 2 / 6]


def test_by_topic_uses_no_more_workers_than_topics():
    assert workers_needed(BY_TOPIC, 4, 3) == 3
    assert workers_needed(OMB, 4, 1) == 4
