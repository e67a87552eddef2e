"""loadgen's stamp in the first 32 bytes of a payload: where the Kafka and Pulsar drivers carry it.

The prefix is the 8 ASCII bytes :data:`PREFIX_MARK`, then :data:`loadgen.driver_api.STAMP` (send
time, message id, intended time). It replaces the payload's first bytes, so a message keeps the
configured size. Why not a header or property: the client then copies one buffer it copies
anyway, instead of building, serialising and (on the consumer) parsing a key/value pair per
message, so both clients spend less CPU per message than with a 24-byte header or property
(bench/results/pulsar.md "Pulsar producer path", bench/results/kafka.md "Issue #27 again").
What it costs: the payload's
first 32 bytes are loadgen's, which matters to anyone who reads the messages with their own
tools, and a payload shorter than the prefix still needs the driver's other carrier.
"""

from __future__ import annotations

import struct

from loadgen.driver_api import STAMP

PREFIX_MARK = b"lg-stamp"
PREFIXED = struct.Struct(">8s" + STAMP.format.lstrip(">"))
PREFIX_BYTES = PREFIXED.size
Stamp = tuple[int, int, int]
"""``(send time ns, message id, intended ns)``."""

pack_prefixed = PREFIXED.pack
unpack_prefixed = PREFIXED.unpack_from


class Prefixer:
    """Builds stamped payloads; keeps the unstamped tail of the last payload it was given.

    The producer loop hands the same few payload objects over and over, so the tail (all but
    the first 32 bytes) is cut once per payload change rather than copied twice per message.
    """

    __slots__ = ("_payload", "_tail")

    def __init__(self) -> None:
        self._payload = b""
        self._tail = b""

    def stamped(self, payload: bytes, sent_ns: int, message_id: int, intended_ns: int) -> bytes:
        """``payload`` (at least :data:`PREFIX_BYTES` long) with the stamp as its first bytes."""
        if payload is not self._payload:
            self._payload, self._tail = payload, payload[PREFIX_BYTES:]
        return pack_prefixed(PREFIX_MARK, sent_ns, message_id, intended_ns) + self._tail


def read_prefix(data: bytes) -> Stamp | None:
    """The stamp in ``data``'s prefix; None when ``data`` does not start with one."""
    if data.startswith(PREFIX_MARK) and len(data) >= PREFIX_BYTES:
        _, sent_ns, message_id, intended_ns = unpack_prefixed(data)
        return sent_ns, message_id, intended_ns
    return None
