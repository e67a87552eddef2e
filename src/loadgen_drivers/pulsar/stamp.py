"""Where a Pulsar message carries loadgen's send time, message id and intended time.

* A payload of at least :data:`~loadgen.driver_api.stamp.PREFIX_BYTES` (32) bytes carries them in
  its first 32 bytes (:mod:`loadgen.driver_api.stamp`).
* A shorter payload carries them in the message property ``lg-stamp``, base64 of
  :data:`loadgen.driver_api.STAMP` (properties are strings).

Why two places: a property costs the client far more than bytes in the payload. Per message it
is a Python-to-C++ call with two string conversions, an entry in the message's metadata map and
a key/value pair serialized into the batch, and on the consumer a dict built from the metadata
map. So the prefix is the carrier wherever the payload has room, and the property only where it
has not (bench/results/pulsar.md "Pulsar producer path" compares the two).
"""

from __future__ import annotations

import binascii
import struct
from collections.abc import Callable

from loadgen.driver_api import STAMP
from loadgen.driver_api.stamp import Stamp, read_prefix

STAMP_PROPERTY = "lg-stamp"
unpack_stamp = STAMP.unpack
a2b_base64 = binascii.a2b_base64


def read_stamp(data: bytes, properties_of: Callable[[], dict[str, str]]) -> Stamp:
    """The stamp of a message with payload ``data``; ``ValueError`` if loadgen did not send it.

    ``properties_of`` (the message's ``properties``) is called only for a payload without the
    prefix: building the dict is most of what reading a property costs."""
    stamp = read_prefix(data)
    if stamp is not None:
        return stamp
    encoded = properties_of().get(STAMP_PROPERTY)
    if encoded is None:
        raise ValueError("no loadgen stamp")
    try:
        return unpack_stamp(a2b_base64(encoded))
    except struct.error as error:
        raise ValueError(f"malformed {STAMP_PROPERTY} property: {error}") from None
