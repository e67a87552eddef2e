"""Size distributions and consumer delay: the workload fields, the pools built from them, and
what a memory-driver run measures with them."""

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from loadgen.base import hdr
from loadgen.base.errors import ConfigError
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.payload import build_payloads, pool_sizes, sized_pool
from loadgen.engine.stats import END_TO_END, merge_all
from loadgen.report.html import render_page
from loadgen.report.shape import format_shape
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen.spec import Workload, load_workload
from loadgen.spec.consumer_delay import POOL_SIZE, ConsumerDelay, delay_pool
from loadgen.spec.message_sizes import SizeRange, SizeWeight
from loadgen.spec.model import parse_model

MEMORY = DriverSpec(name="Memory", kind="memory")
SIZES = [{"size": 100, "weight": 3}, {"size": 4096, "weight": 1}]
BASE = {
    "name": "sizes",
    "topics": 1,
    "partitionsPerTopic": 1,
    "producersPerTopic": 1,
    "subscriptionsPerTopic": 1,
    "consumerPerSubscription": 1,
    "producerRate": 1000,
    "testDurationMinutes": 1,
    "warmupDurationMinutes": 0,
}


def workload(**fields):
    return Workload.model_validate(BASE | fields)


def config_error(**fields):
    with pytest.raises(ConfigError) as caught:
        parse_model(Workload, BASE | fields, file="w.yaml")
    return caught.value


# -- the workload fields ------------------------------------------------------------------------
def test_message_size_is_the_weighted_mean_when_left_out():
    assert workload(messageSizes=SIZES).message_size == round((3 * 100 + 4096) / 4)  # 1099
    assert workload(messageSizeRange={"min": 100, "max": 4096}).message_size == 2098


def test_dumped_workload_validates_again_to_the_same():
    """What the result JSON echoes (and ``--dry-run`` prints) is a valid workload itself."""
    original = workload(
        messageSizeRange={"min": 10, "max": 20},
        consumerDelay={"uniform": {"min": "1ms", "max": "4ms"}},
    )
    echoed = original.model_dump(by_alias=True, mode="json")
    assert echoed["consumerDelay"] == {"uniform": {"min": "1ms", "max": "4ms"}}
    assert Workload.model_validate(echoed) == original


@pytest.mark.parametrize(
    ("fields", "path", "allowed"),
    [
        (
            {"messageSizes": SIZES, "messageSizeRange": {"min": 1, "max": 2}},
            "messageSizeRange",
            "either messageSizes or messageSizeRange",
        ),
        ({"messageSizes": SIZES, "messageSize": 1024}, "messageSize", "1099, or no messageSize"),
        ({"messageSizes": [{"size": 100, "weight": 0}]}, "messageSizes.0.weight", ">= 1"),
        ({"messageSizes": [{"size": 0}]}, "messageSizes.0.size", ">= 1"),
        ({"messageSizeRange": {"min": 50, "max": 10}}, "messageSizeRange.min", "<= max (10)"),
        ({"messageSizes": SIZES, "payloadFile": "p.data"}, "payloadFile", "no payloadFile"),
        ({"consumerDelay": "-2ms"}, "consumerDelay", "a duration"),
        ({"consumerDelay": {"normal": "2ms"}}, "consumerDelay", "exponential"),
        ({"consumerDelay": {"uniform": {"min": "5ms"}}}, "consumerDelay.uniform", "{uniform"),
        ({"consumerDelay": "2 minutes"}, "consumerDelay", "e.g. 30s"),
        ({"consumerDelay": "61s"}, "consumerDelay", "0 .. 60s"),
    ],
)
def test_bad_values_name_field_value_and_allowed(fields, path, allowed):
    error = config_error(**fields)
    assert error.exit_code == 2
    assert error.file == "w.yaml"
    assert error.path == path
    assert allowed in str(error)


def test_cli_exits_2_naming_the_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(BASE | {"messageSizes": SIZES, "messageSize": 1024}))
    done = subprocess.run(
        [sys.executable, "-m", "loadgen", "validate", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "bad.yaml: messageSize" in done.stderr
    assert "1024" in done.stderr and "allowed: 1099, or no messageSize" in done.stderr


def test_yaml_file_with_both_fields_loads(tmp_path):
    path = tmp_path / "w.yaml"
    delay = {"exponential": {"mean": 2}}
    path.write_text(yaml.safe_dump(BASE | {"messageSizes": SIZES, "consumerDelay": delay}))
    loaded = load_workload(path)
    assert loaded.message_sizes == (SizeWeight(size=100, weight=3), SizeWeight(size=4096))
    assert loaded.consumer_delay == ConsumerDelay(kind="exponential", low_s=2.0, high_s=2.0)


# -- the pools ----------------------------------------------------------------------------------
def test_weighted_pool_has_exact_counts_in_a_seeded_order():
    sizes = (SizeWeight(size=100, weight=3), SizeWeight(size=4096, weight=1))
    order = pool_sizes(sizes, None, 0)
    assert Counter(order) == {100: 768, 4096: 256}
    assert order == pool_sizes(sizes, None, 0)  # seeded: the same every time
    assert order[:8] != sorted(order[:8]) or order[8:16] != sorted(order[8:16])  # shuffled
    assert Counter(pool_sizes(sizes, None, 2000)) == {100: 1500, 4096: 500}


def test_range_pool_spans_min_to_max_evenly():
    order = pool_sizes(None, SizeRange(min=100, max=4096), 0)
    assert (min(order), max(order), len(order)) == (100, 4096, 1024)
    assert sum(order) / len(order) == pytest.approx(2098, abs=0.5)
    quarter = Counter(size <= 1099 for size in order)
    assert quarter[True] == pytest.approx(256, abs=2)


def test_sized_pool_shares_one_payload_per_size_and_keeps_the_ratio():
    pool = sized_pool([100, 4096, 100], 0.5)
    assert [len(p) for p in pool] == [100, 4096, 100]
    assert pool[0] is pool[2]
    assert pool[1][2048:] == bytes(2048) and pool[1][:2048] != bytes(2048)


def test_build_payloads_follows_the_distribution():
    pool = build_payloads(workload(messageSizes=SIZES), None)
    assert Counter(map(len, pool)) == {100: 768, 4096: 256}


def test_delay_pools_match_their_distributions():
    assert delay_pool(ConsumerDelay.model_validate("2ms")) == [0.002]
    assert delay_pool(ConsumerDelay.model_validate(0)) == []  # zero: no wrapper at all
    uniform = delay_pool(ConsumerDelay.model_validate({"uniform": {"min": "1ms", "max": "3ms"}}))
    assert len(uniform) == POOL_SIZE and 0.001 <= min(uniform) <= max(uniform) <= 0.003
    assert sum(uniform) / POOL_SIZE == pytest.approx(0.002, rel=1e-9)
    exponential = delay_pool(ConsumerDelay.model_validate({"exponential": {"mean": "2ms"}}))
    assert sum(exponential) / POOL_SIZE == pytest.approx(0.002, rel=0.01)
    assert sorted(exponential)[POOL_SIZE // 2] == pytest.approx(0.002 * 0.693, rel=0.01)


# -- runs on the memory driver ------------------------------------------------------------------
def test_bytes_counters_are_exact_with_a_size_distribution(tmp_path):
    chosen = workload(messageSizes=SIZES, producersPerTopic=2, partitionsPerTopic=2)
    report = run_one(
        RunRequest(
            chosen,
            MEMORY,
            RunOptions(duration_s=2, warmup_s=0, stats_interval_s=1),
            out_dir=tmp_path,
        )
    )
    intervals = report.outcome.intervals
    sent = sum(s.sent for s in intervals)
    pool = build_payloads(chosen, None)
    expected = sum(len(pool[i % len(pool)]) for i in range(sent))
    assert sent > 1500
    assert sum(s.bytes_sent for s in intervals) == expected
    assert sum(s.bytes_received for s in intervals) == expected
    assert expected != sent * len(pool[0])  # counting every message at one size would not match
    assert report.result["messageSize"] == 1099
    assert report.result["run"]["workload"]["messageSizes"] == SIZES
    line = format_shape(report.result)
    assert line is not None and "100 B ×3, 4096 B ×1 (mean 1099 B)" in line
    assert "message sizes" in render_page([Path("r.json")], [report.result])


def test_consumer_delay_caps_the_consume_rate_and_shows_in_e2e(tmp_path):
    """At 5 ms per message one consumer takes at most 200 msg/s of the 300 sent: a backlog
    builds, and end-to-end latency rises with it (stamped on receipt, before the delay)."""
    chosen = workload(messageSize=100, producerRate=300, consumerDelay="5ms")
    report = run_one(
        RunRequest(
            chosen,
            MEMORY,
            RunOptions(duration_s=2, warmup_s=0, stats_interval_s=1),
            out_dir=tmp_path,
        )
    )
    first = report.outcome.intervals[0]
    assert first.sent >= 280
    assert first.received <= 1.1 * first.seconds / 0.005
    e2e = merge_all(report.outcome.intervals).histogram(END_TO_END)
    assert hdr.value_at_percentile(e2e, 50) >= 5_000  # µs
    assert report.result["totalMessagesReceived"] == report.result["totalMessagesSent"]
    line = format_shape(report.result)
    assert line is not None and "consumer delay: fixed 5ms per message" in line
