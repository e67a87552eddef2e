"""Keys, routing and the event format, without a server.

Which segment an event lands on is decided inside the Rust client, which nothing here can
observe without a server. So the spread over segments is shown with the client's key hash
re-implemented below (MurmurHash3 x64-128 of the key's UTF-16LE bytes, seed 1741865571, the
upper 64 bits as a fraction: ``StreamSegments::get_segment_for_string`` in pravega-client-rust
0.3.7, which the ``pravega`` 0.3.8 wheel is built on), checked against that source's own test
vector, and Pravega's equal key ranges for a fixed segment count.
"""

import os
import struct
from collections import Counter

import pravega_client
import pytest

from loadgen.driver_api import NO_MESSAGE_ID, NO_SEND_TIME_NS
from loadgen.engine.keys import POOL_SIZE, key_pool, key_source
from loadgen.engine.payload import PROBE_PAYLOAD
from loadgen_drivers.pravega.events import (
    NO_TIMESTAMP,
    clean_name,
    read_stamped,
    read_unstamped,
    routing_key,
    stamped,
    unstamped,
)

MASK = (1 << 64) - 1
EVENT_ROUTER_SEED = 1741865571
"""The Java hash code of "EventRouter", which both Pravega clients seed the hash with."""


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & MASK


def _fmix(k):
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & MASK
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & MASK
    return k ^ (k >> 33)


def murmur3_x64_128_upper(data: bytes, seed: int) -> int:
    """The first 64-bit half of MurmurHash3_x64_128 (Appleby's reference algorithm)."""
    c1, c2 = 0x87C37B91114253D5, 0x4CF5AD432745937F
    h1 = h2 = seed
    blocks = len(data) // 16
    for i in range(blocks):
        k1, k2 = struct.unpack_from("<QQ", data, i * 16)
        h1 ^= (_rotl((k1 * c1) & MASK, 31) * c2) & MASK
        h1 = (((_rotl(h1, 27) + h2) & MASK) * 5 + 0x52DCE729) & MASK
        h2 ^= (_rotl((k2 * c2) & MASK, 33) * c1) & MASK
        h2 = (((_rotl(h2, 31) + h1) & MASK) * 5 + 0x38495AB5) & MASK
    tail = data[blocks * 16 :].ljust(16, b"\0")
    k1, k2 = struct.unpack("<QQ", tail)
    rest = len(data) % 16
    if rest > 8:
        h2 ^= (_rotl((k2 * c2) & MASK, 33) * c1) & MASK
    if rest > 0:
        h1 ^= (_rotl((k1 * c1) & MASK, 31) * c2) & MASK
    h1 ^= len(data)
    h2 ^= len(data)
    h1 = (h1 + h2) & MASK
    h2 = (h2 + h1) & MASK
    h1, h2 = _fmix(h1), _fmix(h2)
    return (h1 + h2) & MASK


def key_fraction(routing_key_text: str) -> float:
    """Where the Rust client puts a routing key in [0, 1) (its ``u64_to_f64_fraction``)."""
    upper = murmur3_x64_128_upper(routing_key_text.encode("utf-16-le"), EVENT_ROUTER_SEED)
    bits = 0x3FF0_0000_0000_0000 + ((upper >> 12) & 0x000F_FFFF_FFFF_FFFF)
    return struct.unpack("<d", struct.pack("<Q", bits))[0] - 1.0


def segment_of(fraction: float, segments: int) -> int:
    """The segment whose key range holds ``fraction`` when a stream has equal ranges."""
    return min(int(fraction * segments), segments - 1)


def test_the_reimplemented_key_hash_matches_the_rust_clients_own_test_vector():
    assert key_fraction("hello") == pytest.approx(0.658716230571337, abs=1e-15)


def test_random_nano_keys_spread_over_every_segment_under_the_clients_key_hash():
    keys = key_source("RANDOM_NANO")
    segments = 16
    # a send every 7.001 µs for 0.7 s. RANDOM_NANO's index follows the send time (OMB's is
    # time-correlated too): a period sharing factors with 10,000 ns would visit fewer keys
    sends = [routing_key(keys(1_700_000_000_000_000_000 + i * 7_001)) for i in range(100_000)]
    counts = Counter(segment_of(key_fraction(key), segments) for key in set(sends))
    assert len(set(sends)) == POOL_SIZE  # the whole 10,000-key pool is used
    assert sorted(counts) == list(range(segments))
    mean = POOL_SIZE / segments
    assert all(abs(count - mean) < 0.2 * mean for count in counts.values()), counts


def test_a_key_is_the_routing_key_as_text_and_no_key_is_no_routing_key():
    assert key_source("NO_KEY") is None  # the engine then sends key=None
    assert routing_key(None) is None
    assert all(routing_key(key).encode("ascii") == key for key in key_pool()[:100])
    assert routing_key(b"key") == "key"  # the readiness probe's key, as OMB's


SENT_NS = 1_763_900_000_123_456_789


@pytest.mark.parametrize(
    ("message_id", "intended_ns"),
    [
        ((7 << 40) | 123_456, SENT_NS - 250_000),
        (0, 0),
        (2**63 - 1, SENT_NS),
        (NO_MESSAGE_ID, NO_SEND_TIME_NS),  # a readiness probe's event
    ],
)
def test_send_time_id_and_intended_time_are_a_24_byte_prefix_that_round_trips(
    message_id, intended_ns
):
    payload = bytes(range(256)) + os.urandom(768)
    text = stamped(SENT_NS, message_id, intended_ns, payload)
    prefix = text.encode("latin-1")[:24]
    assert prefix == struct.pack(">Qqq", SENT_NS | 1 << 63, message_id, intended_ns)
    assert text.encode("latin-1")[24:] == payload
    wire = text.encode("utf-8")  # what the client sends for a str event
    assert read_stamped(wire) == (payload, SENT_NS, message_id, intended_ns)


def test_bytes_from_0x80_up_travel_as_two_and_the_rest_as_one():
    payload = os.urandom(512) + bytes(512)  # a randomBytesRatio 0.5 payload
    wire = unstamped(0, 0, 0, payload).encode("utf-8")
    assert len(wire) == len(payload) + sum(byte >= 0x80 for byte in payload)
    assert len(unstamped(0, 0, 0, PROBE_PAYLOAD).encode("utf-8")) == len(PROBE_PAYLOAD)


def test_without_the_stamp_the_payload_comes_back_with_no_send_time_id_or_intended_time():
    payload = os.urandom(100)
    assert read_unstamped(unstamped(SENT_NS, 5, SENT_NS, payload).encode("utf-8")) == (
        payload,
        NO_TIMESTAMP,
        NO_MESSAGE_ID,
        NO_TIMESTAMP,
    )


@pytest.mark.parametrize(
    "wire",
    [
        b"\xff\xfe\x00\x01" * 4,  # not UTF-8
        "\u20ac".encode() * 4,  # UTF-8, but not of Latin-1 text
        b"short",  # shorter than the prefix
        (SENT_NS.to_bytes(8, "big") + bytes(24)).decode("latin-1").encode("utf-8"),  # no flag
        (bytes([0x98]) + bytes(22)).decode("latin-1").encode("utf-8"),  # flagged, 23 bytes
    ],
)
def test_events_loadgen_did_not_write_are_refused(wire):
    with pytest.raises(ValueError):
        read_stamped(wire)


def test_names_keep_only_what_omb_keeps():
    assert clean_name("openmessaging-benchmark-0000000-Ab_3x9Q") == (
        "openmessaging-benchmark-0000000-Ab3x9Q"
    )
    assert clean_name("sub-000-a.b_c") == "sub-000-abc"


def test_the_clients_non_blocking_write_takes_text_only_and_a_running_loop():
    """Why events travel as text (see loadgen_drivers.pravega.events); no connection is
    attempted."""
    writer = pravega_client.StreamManager("tcp://127.0.0.1:1").create_writer("scope", "stream")
    with pytest.raises(TypeError, match="cannot be converted to 'PyString'"):
        writer.write_event_async(b"bytes")
    with pytest.raises(RuntimeError, match="no running event loop"):
        writer.write_event_async("text")
