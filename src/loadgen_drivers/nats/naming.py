"""Names on the server: a topic's stream and subjects, and the partition a subject stands for.

A stream name may not hold ``.``, ``*``, ``>``, whitespace or path separators, and a subject
token may not hold the wildcards or whitespace, so those become ``_`` in both; the same topic
gives the same names on every worker. The partition is the subject's last token.
"""

from __future__ import annotations

import re

FORBIDDEN = re.compile(r"[.*>\s/\\]")


def stream_name(topic: str) -> str:
    return FORBIDDEN.sub("_", topic)


def subjects(topic: str, partitions: int) -> list[str]:
    """``<stream>.0`` … ``<stream>.N-1``: one subject per partition."""
    base = stream_name(topic)
    return [f"{base}.{partition}" for partition in range(partitions)]


def stream_filter(topic: str) -> str:
    """The stream's one subject filter, every partition of the topic."""
    return f"{stream_name(topic)}.*"


def durable_name(subscription: str) -> str:
    """The durable pull consumer of a subscription (OMB: ``durable-<subscription>``)."""
    return "durable-" + FORBIDDEN.sub("_", subscription)


def partition_of(subject: str) -> int:
    """The partition ``subject`` is for; -1 when its last token is no number."""
    token = subject.rpartition(".")[2]
    return int(token) if token.isdigit() else -1
