"""The workload the benches run: one topic, 16 partitions, 1 KiB, one producer and one
consumer, no warm-up of its own (each bench sets its warm-up in the run's options); a bench
changes what it varies."""

from __future__ import annotations

from loadgen.spec import Workload, parse_model


def one_topic(name: str, rate: float, **changes: object) -> Workload:
    """That workload at ``rate`` msg/s, named ``name``, with ``changes`` (OMB field names)."""
    fields = {
        "name": name,
        "topics": 1,
        "partitionsPerTopic": 16,
        "messageSize": 1024,
        "subscriptionsPerTopic": 1,
        "consumerPerSubscription": 1,
        "producersPerTopic": 1,
        "producerRate": rate,
        "testDurationMinutes": 1,
        "warmupDurationMinutes": 0,
        **changes,
    }
    return parse_model(Workload, fields, file="bench")
