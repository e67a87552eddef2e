"""The event on the wire: send time, payload, routing key, and names Pravega accepts.

* With ``includeTimestampInEvent`` an event is an 8-byte big-endian send time (epoch **ns**,
  loadgen's unit; OMB writes epoch ms) followed by the payload; without it, the payload alone.
* The client's only non-blocking write (``write_event_async``) takes ``str``, not bytes, and
  sends its UTF-8. So an event's bytes travel as the UTF-8 of their Latin-1 reading: bytes
  below 0x80 as themselves, every other byte as two. That round-trips exactly (the consumer
  reverses it), but a random payload is ~1.5× its size on the wire (a zero or ASCII payload is
  not inflated). Transactional writes use the same form, so one reader decodes every event.
* A key (``bytes``, e.g. a RANDOM_NANO pool key) becomes the routing key as text; ``None``
  (NO_KEY) writes without a routing key, and the client picks a segment at random per event.
"""

from __future__ import annotations

import re

from loadgen.driver import NO_SEND_TIME_NS

TIMESTAMP_BYTES = 8
NO_TIMESTAMP = NO_SEND_TIME_NS
"""Passed as the send time of an unstamped event, so no end-to-end latency is recorded for it
(OMB passes Long.MAX_VALUE for the same reason)."""
NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9-]")


def clean_name(name: str) -> str:
    """OMB's ``cleanName``: stream and reader-group names keep only ``[A-Za-z0-9-]``."""
    return NOT_IN_NAMES.sub("", name)


def stamped(sent_ns: int, payload: bytes) -> str:
    """The event text for ``payload`` sent at ``sent_ns``."""
    return (sent_ns.to_bytes(TIMESTAMP_BYTES, "big") + payload).decode("latin-1")


def unstamped(_sent_ns: int, payload: bytes) -> str:
    return payload.decode("latin-1")


def routing_key(key: bytes | None) -> str | None:
    return None if key is None else key.decode("latin-1")


def read_stamped(wire: bytes) -> tuple[bytes, int]:
    """``(payload, send time ns)`` of a stamped event as read; ``ValueError`` if not ours."""
    event = _written_bytes(wire)
    if len(event) < TIMESTAMP_BYTES:
        raise ValueError(f"a {len(event)}-byte event has no {TIMESTAMP_BYTES}-byte send time")
    return event[TIMESTAMP_BYTES:], int.from_bytes(event[:TIMESTAMP_BYTES], "big")


def read_unstamped(wire: bytes) -> tuple[bytes, int]:
    return _written_bytes(wire), NO_TIMESTAMP


def _written_bytes(wire: bytes) -> bytes:
    """The bytes a producer wrote, from what a reader got; ``UnicodeError`` if not ours."""
    return wire.decode("utf-8").encode("latin-1")
