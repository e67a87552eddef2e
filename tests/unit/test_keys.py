import pytest

from loadgen.engine.keys import POOL_SIZE, key_pool, key_source, random_nano_index


def test_key_pool_has_ten_thousand_ten_character_base64url_keys():
    pool = key_pool()
    assert len(pool) == POOL_SIZE
    assert {len(key) for key in pool} == {10}
    assert all(
        set(key.decode()) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        for key in pool
    )


def test_no_key_sends_without_a_key():
    assert key_source("NO_KEY") is None


def test_round_robin_starts_at_index_one_and_wraps_like_omb():
    pool = key_pool()
    source = key_source("KEY_ROUND_ROBIN")
    first = [source(0) for _ in range(POOL_SIZE + 1)]
    assert first[0] == pool[1]
    assert first[POOL_SIZE - 2] == pool[POOL_SIZE - 1]
    assert first[POOL_SIZE - 1] == pool[0]
    assert first[POOL_SIZE] == pool[1]


@pytest.mark.parametrize(
    ("nano", "expected"),
    [
        (123_456, 3_456),
        (2**31 + 5, abs(-(2**31) + 5) % 10_000),  # truncates to a negative int32 first
        (2**32 + 7, 7),
        (-1 & (2**64 - 1), 1),
    ],
)
def test_random_nano_index_matches_java_int_truncation(nano, expected):
    assert random_nano_index(nano) == expected


def test_random_nano_picks_the_pool_key_of_the_send_time():
    assert key_source("RANDOM_NANO")(123_456) == key_pool()[3_456]


def test_unknown_distributor_is_rejected():
    with pytest.raises(ValueError):
        key_source("SOMETIMES_KEY")
