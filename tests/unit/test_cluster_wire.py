"""Interval stats cross the wire unchanged, and malformed request bodies are refused by name."""

import numpy as np
import pytest
from pydantic import ValidationError

from loadgen.base import hdr
from loadgen.engine.local_worker import Totals
from loadgen.engine.stats import (
    END_TO_END,
    END_TO_END_UNCORRECTED,
    PUBLISH,
    IntervalStats,
    merge_all,
)
from loadgen.formats import worker_protocol as wire


def stats(seed: int) -> IntervalStats:
    rng = np.random.default_rng(seed)
    return IntervalStats(
        start_ms=1_000,
        end_ms=2_000,
        sent=500,
        send_errors=2,
        bytes_sent=512_000,
        received=498,
        bytes_received=509_952,
        negative_e2e=3,
        negative_e2e_uncorrected=6,
        duplicates=4,
        out_of_order=5,
        cpu_ns=7_000,
        cpu_wait_ns=8_000,
        cpu_slices=9,
        histograms={
            PUBLISH: hdr.record_ns(PUBLISH, rng.integers(1_000, 90_000_000, 500)),
            END_TO_END: hdr.record_ns(END_TO_END, rng.lognormal(15, 1.5, 498).astype(np.int64)),
            END_TO_END_UNCORRECTED: hdr.record_ns(END_TO_END_UNCORRECTED, rng.integers(1, 9, 9)),
        },
    )


def test_stats_round_trip_keeps_every_count_and_bucket():
    sent = stats(1)
    back = wire.stats_from_json(wire.stats_to_json(sent))
    assert (back.sent, back.send_errors, back.received, back.negative_e2e) == (500, 2, 498, 3)
    assert (back.duplicates, back.out_of_order, back.negative_e2e_uncorrected) == (4, 5, 6)
    assert (back.cpu_ns, back.cpu_wait_ns, back.cpu_slices) == (7_000, 8_000, 9)
    for metric in (PUBLISH, END_TO_END, END_TO_END_UNCORRECTED):
        assert np.array_equal(back.histogram(metric).index, sent.histogram(metric).index)
        assert np.array_equal(back.histogram(metric).counts, sent.histogram(metric).counts)


def test_percentiles_merged_after_the_wire_equal_those_merged_before():
    parts = [stats(seed) for seed in range(3)]
    travelled = [wire.stats_from_json(wire.stats_to_json(part)) for part in parts]
    here, there = merge_all(parts).histogram(END_TO_END), merge_all(travelled).histogram(END_TO_END)
    for p in (50, 99, 99.9, 100):
        assert hdr.value_at_percentile(there, p) == hdr.value_at_percentile(here, p)


def test_totals_round_trip():
    totals = Totals(sent=10, received=9, probe_sent=1, probe_received=1)
    assert wire.totals_from_json(wire.totals_to_json(totals)) == totals


def test_payloads_travel_as_base64_bytes():
    body = wire.LoadBody.of(100.0, [b"\x00\xffabc", bytes(3)], "NO_KEY")
    assert wire.LoadBody.model_validate(body.model_dump()).payload_bytes() == [
        b"\x00\xffabc",
        bytes(3),
    ]


def test_the_in_flight_window_travels_with_the_load():
    body = wire.LoadBody.of(100.0, [b"x"], "NO_KEY", 1)
    assert wire.LoadBody.model_validate(body.model_dump()).max_in_flight == 1
    assert wire.LoadBody.of(100.0, [b"x"], "NO_KEY").max_in_flight is None


@pytest.mark.parametrize(
    ("model", "body", "field"),
    [
        (wire.TopicsBody, {"count": 0, "partitions": 1}, "count"),
        (wire.TopicsBody, {"count": 1, "partitions": 1, "extra": 1}, "extra"),
        (wire.LoadBody, {"rate": -1, "payloads": ["AA=="], "key_distributor": "NO_KEY"}, "rate"),
        (
            wire.LoadBody,
            {"rate": 1, "payloads": ["AA=="], "key_distributor": "NO_KEY", "max_in_flight": 0},
            "max_in_flight",
        ),
        (wire.SnapshotBody, {"start_ms": "soon", "end_ms": 1, "warmup": False}, "start_ms"),
    ],
)
def test_bad_bodies_are_refused_naming_the_field(model, body, field):
    with pytest.raises(ValidationError, match=field):
        model.model_validate(body)


@pytest.mark.parametrize(
    "body", [{"rate": 0, "keep_lag": True}, {"rate": 5.0}, {"rate": "nan", "keep_lag": False}]
)
def test_a_rate_change_needs_a_positive_finite_rate_and_the_lag_choice(body):
    with pytest.raises(ValidationError):
        wire.RateBody.model_validate(body)
    assert wire.RateBody.model_validate({"rate": 2.5, "keep_lag": True}).rate == 2.5


def test_a_clock_body_becomes_the_consumer_workers_table():
    body = wire.ClockBody.model_validate(
        {"own_offset_ns": 250, "producers": [[0, 2, 10], [2, 1, -5]]}
    )
    table = body.table()
    ids = np.array([0, 1 << 40, 2 << 40, 3 << 40], dtype=np.int64)
    assert table.shifts(ids).tolist() == [240, 240, 255, 0]
    with pytest.raises(ValidationError, match="own_offset_ns"):
        wire.ClockBody.model_validate({"producers": []})
