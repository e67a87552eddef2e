"""Where a NATS message carries loadgen's stamp: the payload's first 32 bytes
(:mod:`loadgen.driver_api.stamp`), or, for a payload shorter than that, the header ``lg-stamp``
(hex of :data:`loadgen.driver_api.STAMP`; NATS header values are text).

The prefix is the cheaper carrier on both sides: a header costs nats-py a header block to
build per publish and an email-parser pass per delivery (bench/results/nats.md).
"""

from __future__ import annotations

from loadgen.driver_api import STAMP
from loadgen.driver_api.stamp import Stamp, read_prefix

STAMP_HEADER = "lg-stamp"
MSG_ID_HEADER = "Nats-Msg-Id"


def stamp_header(sent_ns: int, message_id: int, intended_ns: int) -> str:
    return STAMP.pack(sent_ns, message_id, intended_ns).hex()


def read_stamp(data: bytes, headers: dict[str, str] | None) -> Stamp:
    """The stamp of a message; ``ValueError`` when loadgen did not send it."""
    stamp = read_prefix(data)
    if stamp is not None:
        return stamp
    encoded = (headers or {}).get(STAMP_HEADER)
    if encoded is None:
        raise ValueError("no loadgen stamp")
    return STAMP.unpack(bytes.fromhex(encoded))
