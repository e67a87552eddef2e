"""Which producers and consumers a workload asks for, before anyone decides where they run.

One list entry per producer (its topic) and per consumer (its topic and subscription), in OMB's
order, so a single worker and a split over many build the same set.
"""

from __future__ import annotations

from loadgen.worker.names import subscription_names

Subscription = tuple[str, str]
"""A consumer's ``(topic, subscription)``."""


def producer_topics(topics: list[str], producers_per_topic: int) -> list[str]:
    """The topic of every producer: each topic once per round, ``producers_per_topic`` rounds."""
    return [topic for _ in range(producers_per_topic) for topic in topics]


def consumer_subscriptions(
    topics: list[str], subscriptions_per_topic: int, consumers_per_subscription: int
) -> list[Subscription]:
    """The ``(topic, subscription)`` of every consumer; subscription names are fresh per topic."""
    return [
        (topic, subscription)
        for topic in topics
        for subscription in subscription_names(subscriptions_per_topic)
        for _ in range(consumers_per_subscription)
    ]
