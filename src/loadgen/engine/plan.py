"""Which producers and consumers a workload asks for, before anyone decides where they run.

One list entry per producer (its topic) and per consumer (its topic and subscription), in OMB's
order, so a single worker and a split over many build the same set.
"""

from __future__ import annotations

from loadgen.engine.names import subscription_index, subscription_names

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


def catch_up_subscriptions(subscriptions: list[Subscription], tailing_per_topic: int) -> set[str]:
    """The subscriptions that build and read a backlog: all but each topic's first
    ``tailing_per_topic`` (those keep tailing; a mixed run)."""
    return {name for _, name in subscriptions if subscription_index(name) >= tailing_per_topic}
