"""The Prometheus export: what a scrape of an interval says, the board's life cycle, the port."""

import re
import socket
import urllib.error
import urllib.request

import pytest
from hdrh.histogram import HdrHistogram
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import CollectorRegistry

import loadgen
from loadgen.base import hdr
from loadgen.base.errors import ConfigError
from loadgen.driver_api.local.process import free_port
from loadgen.engine.stats import END_TO_END, PUBLISH, PUBLISH_DELAY, IntervalStats
from loadgen.metrics.board import MetricsBoard
from loadgen.metrics.endpoint import serving

RUN = {"run_id": "r1", "workload": "w", "driver": "Memory"}
LABELS = {"role": "coordinator", "worker": "all", **RUN}
SIXTEEN_MS = [ms * 1_000_000 for ms in range(1, 17)]
"""16 values 1 ms apart: Java's p95 targets the 16th (ceil(15.2)), hdrh's the 15th (round)."""


def scrape(board: MetricsBoard) -> dict[tuple[str, tuple], float]:
    """Every sample of one scrape, keyed by (name, sorted labels)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(board)
    text = generate_latest(registry).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples, name: str, **own: str) -> float:
    return samples[(name, tuple(sorted({**LABELS, **own}.items())))]


def interval(warmup: bool = False) -> IntervalStats:
    return IntervalStats(
        start_ms=1_700_000_000_123,
        end_ms=1_700_000_001_456,
        sent=16,
        send_errors=2,
        bytes_sent=16 * 100,
        received=15,
        bytes_received=15 * 100,
        warmup=warmup,
        histograms={
            PUBLISH: hdr.record_ns(PUBLISH, SIXTEEN_MS),
            PUBLISH_DELAY: hdr.record_ns(PUBLISH_DELAY, [7_000, 9_000, 250_000]),
            END_TO_END: hdr.record_ns(END_TO_END, [3_333_333] * 14 + [12_345_678]),
        },
    )


@pytest.fixture
def board():
    board = MetricsBoard(role="coordinator", worker="all")
    board.start_run(**RUN)
    return board


def test_a_scrape_shows_the_intervals_counts_rates_and_java_percentiles(board):
    stats = interval()
    board.on_phase("measure", 5.0)
    board.on_interval(stats, 42)
    samples = scrape(board)

    assert value(samples, "loadgen_interval_index") == 0
    assert value(samples, "loadgen_interval_end_timestamp_seconds") == 1_700_000_001.456
    assert round(value(samples, "loadgen_interval_start_timestamp_seconds") * 1000) == (
        stats.start_ms
    )
    assert value(samples, "loadgen_interval_warmup") == 0
    assert value(samples, "loadgen_consumer_backlog_messages") == 42
    for name, count in [
        ("producer_messages_sent", 16),
        ("producer_message_send_errors", 2),
        ("producer_bytes_sent", 1600),
        ("consumer_messages_recv", 15),
        ("consumer_bytes_recv", 1500),
    ]:
        assert value(samples, f"loadgen_interval_{name}") == count
        assert value(samples, f"loadgen_interval_{name}_per_second") == count / 1.333
        assert value(samples, f"loadgen_{name}_total") == count
    for metric, name in [
        (PUBLISH, "loadgen_producer_publish_latency_seconds"),
        (PUBLISH_DELAY, "loadgen_producer_publish_delay_seconds"),
        (END_TO_END, "loadgen_consumer_e2e_latency_seconds"),
    ]:
        histogram = stats.histogram(metric)
        assert value(samples, "loadgen_interval_latency_values", metric=metric) == histogram.total
        for quantile, percentile in [("0.5", 50), ("0.95", 95), ("0.99", 99), ("0.999", 99.9)]:
            scraped = value(samples, name, quantile=quantile)
            assert round(scraped * 1e6) == hdr.value_at_percentile(histogram, percentile)
        assert round(value(samples, name, quantile="1") * 1e6) == histogram.max


def test_percentiles_follow_java_where_hdrh_rounds_differently(board):
    board.on_interval(interval())
    p95 = round(
        value(scrape(board), "loadgen_producer_publish_latency_seconds", quantile="0.95") * 1e6
    )
    reference = HdrHistogram(1, 60_000_000, 5)
    for nanos in SIXTEEN_MS:
        reference.record_value(nanos // 1000)
    assert p95 == reference.get_highest_equivalent_value(16_000)  # the 16th value, as Java
    assert p95 != reference.get_value_at_percentile(95)  # hdrh's would be the 15th


def test_totals_add_up_over_intervals_and_a_new_run_starts_over(board):
    board.on_interval(interval(warmup=True))
    board.on_interval(interval())
    samples = scrape(board)
    assert value(samples, "loadgen_interval_index") == 1
    assert value(samples, "loadgen_producer_messages_sent_total") == 32
    assert value(samples, "loadgen_consumer_bytes_recv_total") == 3000

    board.start_run(run_id="r2", workload="w", driver="Memory")
    fresh = scrape(board)
    labels = {**LABELS, "run_id": "r2"}
    key = ("loadgen_producer_messages_sent_total", tuple(sorted(labels.items())))
    assert fresh[key] == 0
    assert not any(name == "loadgen_interval_index" for name, _ in fresh)


def test_run_state_follows_the_phases_and_the_end(board):
    assert value(scrape(board), "loadgen_run_active") == 1
    assert value(scrape(board), "loadgen_run_phase", phase="setup") == 1
    board.on_phase("warmup", 2.0)
    samples = scrape(board)
    assert value(samples, "loadgen_run_phase", phase="warmup") == 1
    assert value(samples, "loadgen_run_phase", phase="setup") == 0
    board.end_run()
    samples = scrape(board)
    assert value(samples, "loadgen_run_active") == 0
    assert value(samples, "loadgen_run_phase", phase="idle") == 1


def get(url: str, token: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, ""


def test_the_endpoint_serves_the_board_and_closes_its_port_at_the_end(board):
    board.on_interval(interval())
    with serving(board, "127.0.0.1", 0) as url:
        status, text = get(url)
        port = int(url.rsplit(":", 1)[1].split("/")[0])
    assert status == 200 and "loadgen_interval_producer_messages_sent{" in text
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2)


def test_a_port_in_use_fails_naming_host_and_port(board):
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with (
            pytest.raises(ConfigError, match=re.escape(f"127.0.0.1:{port}")) as caught,
            serving(board, "127.0.0.1", port),
        ):
            pass
    assert caught.value.exit_code == 2 and caught.value.path == "--metrics-port"


def test_beyond_loopback_needs_a_token_and_scrapes_must_send_it(board):
    with pytest.raises(ConfigError, match=r"0\.0\.0\.0"), serving(board, "0.0.0.0", 0):
        pass
    with serving(board, "0.0.0.0", 0, token="s3cret") as url:
        local = url.replace("0.0.0.0", "127.0.0.1")
        assert get(local)[0] == 401
        assert get(local, token="wrong")[0] == 401
        assert get(local, token="s3cret")[0] == 200


def test_the_python_api_serves_each_interval_before_its_callback_sees_it():
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    seen = []

    def on_interval(stats: IntervalStats, backlog: int) -> None:
        samples = {
            sample.name: (sample.value, sample.labels)
            for family in text_string_to_metric_families(get(url)[1])
            for sample in family.samples
        }
        seen.append((stats, backlog, samples))

    stream = {
        "topics": 1,
        "partitionsPerTopic": 1,
        "messageSize": 64,
        "subscriptionsPerTopic": 1,
        "consumerPerSubscription": 1,
        "producersPerTopic": 1,
        "producerRate": 1000,
        "testDurationMinutes": 1,
    }
    result = loadgen.run(
        stream, loadgen.driver("memory"), duration="3s", warmup=0, on_interval=on_interval,
        metrics_port=port,
    )  # fmt: skip
    assert len(seen) == 3
    for index, (stats, backlog, samples) in enumerate(seen):
        assert samples["loadgen_interval_index"][0] == index
        assert samples["loadgen_interval_producer_messages_sent"][0] == stats.sent > 0
        assert samples["loadgen_consumer_backlog_messages"][0] == backlog
        assert samples["loadgen_run_active"][1]["run_id"] == result.document["run"]["runId"]
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2)
