"""Reading loadgen's stamp off a Pulsar message: the payload prefix first, then the properties."""

from base64 import b64encode

import pytest

from loadgen.driver_api import STAMP
from loadgen.driver_api.stamp import PREFIX_MARK, PREFIXED
from loadgen_drivers.pulsar.stamp import STAMP_PROPERTY, read_stamp

SENT, ID, INTENDED = 1_763_900_000_123_456_789, (7 << 40) + 12, 1_763_900_000_123_000_000


def unreadable_properties():
    raise AssertionError("a prefixed payload must not build the properties")


def test_a_prefixed_payload_is_read_without_its_properties():
    data = PREFIXED.pack(PREFIX_MARK, SENT, ID, INTENDED) + b"rest of the payload"
    assert read_stamp(data, unreadable_properties) == (SENT, ID, INTENDED)


def test_a_payload_of_exactly_the_prefix_is_read():
    assert read_stamp(PREFIXED.pack(PREFIX_MARK, SENT, ID, INTENDED), unreadable_properties) == (
        SENT,
        ID,
        INTENDED,
    )


def test_a_short_payload_is_read_from_the_property():
    stamp = b64encode(STAMP.pack(SENT, ID, INTENDED)).decode()
    assert read_stamp(b"short", lambda: {STAMP_PROPERTY: stamp}) == (SENT, ID, INTENDED)


def test_a_mark_too_short_for_a_stamp_falls_back_to_the_properties():
    data = PREFIX_MARK + bytes(PREFIXED.size - len(PREFIX_MARK) - 1)
    stamp = b64encode(STAMP.pack(SENT, ID, INTENDED)).decode()
    assert read_stamp(data, lambda: {STAMP_PROPERTY: stamp}) == (SENT, ID, INTENDED)
    with pytest.raises(ValueError, match="no loadgen stamp"):
        read_stamp(data, dict)


@pytest.mark.parametrize(
    ("properties", "error"),
    [
        ({}, "no loadgen stamp"),
        ({STAMP_PROPERTY: "AAAA"}, "malformed lg-stamp"),
        ({STAMP_PROPERTY: "not base64!"}, "base64|padding"),
        ({"lg-send-ns": str(SENT)}, "no loadgen stamp"),  # a send time alone is not a stamp
    ],
)
def test_anything_else_is_not_loadgens(properties, error):
    with pytest.raises(ValueError, match=error):
        read_stamp(b"x" * 64, lambda: properties)
