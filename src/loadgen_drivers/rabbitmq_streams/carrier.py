"""Where a stream message carries loadgen's stamp: the payload's first 32 bytes.

Messages go out as raw bytes (no AMQP 1.0 encoding): the stamp is the payload prefix of
:mod:`loadgen.driver_api.stamp`, so the producer copies the payload once and the consumer hands
whole chunks to the engine's recorder in one call. An application property would need an AMQP
1.0 message encoded per send and decoded per delivery (bench/results/rabbitmq-streams.md,
"Stamp carrier", measures both). A payload shorter than 32 bytes cannot give up its first 32:
it travels behind a 32-byte prefix of its own mark, :data:`SHORT_MARK`, and the consumer hands
``on_message`` the payload as it was sent.
"""

from __future__ import annotations

from loadgen.driver_api.stamp import PREFIX_BYTES, PREFIXED, Stamp

SHORT_MARK = b"lg-short"
pack_prefixed = PREFIXED.pack
unpack_prefixed = PREFIXED.unpack_from


def stamped_short(payload: bytes, sent_ns: int, message_id: int, intended_ns: int) -> bytes:
    """A payload under 32 bytes behind a prefix of its own."""
    return pack_prefixed(SHORT_MARK, sent_ns, message_id, intended_ns) + payload


def read_short(data: bytes) -> tuple[Stamp, bytes] | None:
    """The stamp and original payload of a message :func:`stamped_short` made; else None."""
    if not data.startswith(SHORT_MARK) or len(data) < PREFIX_BYTES:
        return None
    _, sent_ns, message_id, intended_ns = unpack_prefixed(data)
    return (sent_ns, message_id, intended_ns), data[PREFIX_BYTES:]
