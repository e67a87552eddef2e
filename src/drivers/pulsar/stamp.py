"""Where a Pulsar message carries loadgen's send time, message id and intended time.

* A payload of at least :data:`PREFIXED` ``.size`` (32) bytes carries them in its first 32
  bytes: the 8 bytes ``lg-stamp``, then :data:`loadgen.driver.STAMP` (24 bytes). They replace
  the payload's first bytes, so a message is exactly the configured size.
* A shorter payload carries them in the message property ``lg-stamp``, base64 of the same 24
  bytes (properties are strings).

Why two places: a property costs the client far more than bytes in the payload. Per message it
is a Python-to-C++ call with two string conversions, an entry in the message's metadata map and
a key/value pair serialized into the batch, and on the consumer a dict built from the metadata
map. Measured on the producer, pinned: building a 1 KiB message with the property takes 2.0 µs,
with the prefix 1.6 µs; the whole client, I/O thread included, ~11 % less CPU per message
(bench/RESULTS.md, ``bench/pulsar_stamp_carriers.py``). What the prefix costs: loadgen
overwrites the first 32 bytes of the payload it was given, which matters to anyone who reads
the messages with their own tools.
"""

from __future__ import annotations

import binascii
import struct
from collections.abc import Callable

from loadgen.driver import STAMP

PREFIX_MARK = b"lg-stamp"
PREFIXED = struct.Struct(">8s" + STAMP.format.lstrip(">"))
"""The 32-byte prefix: :data:`PREFIX_MARK`, then the send time, id and intended time."""
STAMP_PROPERTY = "lg-stamp"
Stamp = tuple[int, int, int]
"""``(send time ns, message id, intended ns)``."""
unpack_prefixed = PREFIXED.unpack_from
unpack_stamp = STAMP.unpack
a2b_base64 = binascii.a2b_base64


def read_stamp(data: bytes, properties_of: Callable[[], dict[str, str]]) -> Stamp:
    """The stamp of a message with payload ``data``; ``ValueError`` if loadgen did not send it.

    ``properties_of`` (the message's ``properties``) is called only for a payload without the
    prefix: building the dict is most of what reading a property costs."""
    if data.startswith(PREFIX_MARK) and len(data) >= PREFIXED.size:
        _, sent_ns, message_id, intended_ns = unpack_prefixed(data)
        return sent_ns, message_id, intended_ns
    stamp = properties_of().get(STAMP_PROPERTY)
    if stamp is None:
        raise ValueError("no loadgen stamp")
    try:
        return unpack_stamp(a2b_base64(stamp))
    except struct.error as error:
        raise ValueError(f"malformed {STAMP_PROPERTY} property: {error}") from None
