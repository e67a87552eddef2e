"""The event on the wire: send time, message id, intended time, payload, routing key, names.

* With ``includeTimestampInEvent`` an event is a 24-byte prefix followed by the payload: three
  big-endian 8-byte integers, the send time (epoch **ns**, loadgen's unit; OMB writes epoch ms)
  with its top bit set, then the signed message id, then the signed intended send time (epoch
  ns). An event without the top bit, or shorter than the prefix, is not loadgen's. Without the
  option, an event is the payload alone and is read with no send time, id or intended time.
* The client's only non-blocking write (``write_event_async``) takes ``str``, not bytes, and
  sends its UTF-8. So an event's bytes travel as the UTF-8 of their Latin-1 reading: bytes
  below 0x80 as themselves, every other byte as two. That round-trips exactly (the consumer
  reverses it), but a random payload is ~1.5× its size on the wire (a zero or ASCII payload is
  not inflated; the prefix takes 25–30 bytes). Transactional writes use the same form, so one
  reader decodes every event.
* A key (``bytes``, e.g. a RANDOM_NANO pool key) becomes the routing key as text; ``None``
  (NO_KEY) writes without a routing key, and the client picks a segment at random per event.
* The reader's slices do not say which segment they come from (the binding exposes only the
  events' data and offset), so the partition index given to ``on_message`` is -1.
"""

from __future__ import annotations

import re
import struct

from loadgen.driver_api import NO_MESSAGE_ID, NO_SEND_TIME_NS

STAMP = struct.Struct(">Qqq")
"""The prefix: flagged send time, message id, intended send time."""
STAMP_FLAG = 1 << 63
"""Set in the send time of the prefix: a payload's first byte alone tells it is not stamped."""
NO_TIMESTAMP = NO_SEND_TIME_NS
"""Passed as the send time of an unstamped event, so no end-to-end latency is recorded for it
(OMB passes Long.MAX_VALUE for the same reason)."""
NO_PARTITION = -1
"""The partition index of every event read: the client does not say which segment it came from."""
Read = tuple[bytes, int, int, int]
"""``(payload, send time ns, message id, intended ns)`` of an event as read."""
pack_stamp = STAMP.pack
unpack_stamp = STAMP.unpack_from
NOT_IN_NAMES = re.compile(r"[^A-Za-z0-9-]")


def clean_name(name: str) -> str:
    """OMB's ``cleanName``: stream and reader-group names keep only ``[A-Za-z0-9-]``."""
    return NOT_IN_NAMES.sub("", name)


def stamped(sent_ns: int, message_id: int, intended_ns: int, payload: bytes) -> str:
    """The event text for ``payload`` sent at ``sent_ns``, with its id and intended time."""
    return (pack_stamp(sent_ns | STAMP_FLAG, message_id, intended_ns) + payload).decode("latin-1")


def unstamped(_sent_ns: int, _message_id: int, _intended_ns: int, payload: bytes) -> str:
    return payload.decode("latin-1")


def routing_key(key: bytes | None) -> str | None:
    return None if key is None else key.decode("latin-1")


def read_stamped(wire: bytes) -> Read:
    """A stamped event as read; ``ValueError`` if not loadgen's."""
    event = _written_bytes(wire)
    if len(event) < STAMP.size or not event[0] & 0x80:
        raise ValueError(f"a {len(event)}-byte event without loadgen's {STAMP.size}-byte prefix")
    flagged_ns, message_id, intended_ns = unpack_stamp(event)
    return event[STAMP.size :], flagged_ns ^ STAMP_FLAG, message_id, intended_ns


def read_unstamped(wire: bytes) -> Read:
    return _written_bytes(wire), NO_TIMESTAMP, NO_MESSAGE_ID, NO_TIMESTAMP


def _written_bytes(wire: bytes) -> bytes:
    """The bytes a producer wrote, from what a reader got; ``UnicodeError`` if not ours."""
    return wire.decode("utf-8").encode("latin-1")
