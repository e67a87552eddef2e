"""The ``XADD`` frames a producer writes, in RESP (the protocol's request form: an array of
bulk strings).

Everything before the payload is the same for every message of one stream key, so it is framed
once per key: a message then costs its length line, the payload and a CRLF, joined with the
batch's other frames into one write. redis-py frames the other commands (``pack_commands``)
and parses every reply.
"""

from __future__ import annotations

CRLF = b"\r\n"
PAYLOAD_FIELD = b"payload"
"""OMB's field name: its consumer reads ``payload`` and nothing else."""
STAMP_FIELD = b"lg-stamp"
STAMP_BYTES = 24


def bulk(value: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(value), value)


def length_line(size: int) -> bytes:
    """The header of a bulk string of ``size`` bytes (its bytes and a CRLF follow)."""
    return b"$%d\r\n" % size


def xadd_head(key: str, trim: list[bytes], *, stamp_field: bool) -> bytes:
    """``XADD key [MAXLEN ~ n] * [lg-stamp]`` up to the stamp's or the payload's bytes: with
    ``stamp_field``, ending with the stamp's length line (then 24 bytes, a CRLF and
    :func:`payload_head`); without, ending with the ``payload`` field name (then the payload's
    length line, bytes and a CRLF)."""
    arguments = [b"XADD", key.encode(), *trim, b"*"]
    fields = 2 if stamp_field else 1
    head = b"*%d\r\n" % (len(arguments) + 2 * fields)
    head += b"".join(bulk(argument) for argument in arguments)
    if stamp_field:
        return head + bulk(STAMP_FIELD) + length_line(STAMP_BYTES)
    return head + bulk(PAYLOAD_FIELD)


def trim_arguments(max_len: int | None, exact: bool) -> list[bytes]:
    """``MAXLEN ~ n`` (or ``= n``), none without a ``max_len``."""
    if max_len is None:
        return []
    return [b"MAXLEN", b"=" if exact else b"~", b"%d" % max_len]


AFTER_STAMP = CRLF + bulk(PAYLOAD_FIELD)
"""What follows the stamp's bytes in a frame with a stamp field: its CRLF, the payload name."""
