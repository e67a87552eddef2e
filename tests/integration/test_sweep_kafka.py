"""`loadgen sweep` against a real (tansu) Kafka broker: three rates, three results, one table."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from loadgen.formats.verdict_columns import mark
from loadgen.spec import load_yaml

pytestmark = [pytest.mark.integration, pytest.mark.long]

RATES = (1_000, 3_000, 5_000)


@pytest.fixture(scope="module")
def swept(kafka_broker, tmp_path_factory):
    """One CLI sweep over three rates, as a user runs it."""
    here = tmp_path_factory.mktemp("sweep")
    driver = here / "kafka.yaml"
    driver.write_text(
        yaml.safe_dump({"name": "Kafka", "driver": "kafka"} | kafka_broker.driver_config)
    )
    workload = here / "workload.yaml"
    classic = (
        Path(__file__).resolve().parents[2] / "configs/workloads/1-topic-16-partitions-1kb-10k.yaml"
    )
    workload.write_text(
        yaml.safe_dump(load_yaml(classic) | {"name": "kafka sweep", "partitionsPerTopic": 4})
    )
    done = subprocess.run(
        [
            sys.executable, "-m", "loadgen", "sweep", str(workload), "-d", str(driver),
            "--rates", ",".join(map(str, RATES)), "--duration", "2s", "--warmup", "0",
            "--stats-interval", "1s", "--processes", "1", "--plain", "-o", str(here / "out"),
        ],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    [summary] = (here / "out").glob("kafka-sweep-sweep-Kafka-*.json")
    return done, json.loads(summary.read_text()), summary


def test_a_three_step_sweep_prints_the_rate_vs_latency_table(swept):
    done, summary, _ = swept
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    header = lines.index(next(line for line in lines if "target msg/s" in line))
    for name in (
        "publish p50",
        "publish p99",
        "publish p99.9",
        "e2e p50",
        "e2e p99",
        "e2e p99.9",
        "verdict",
    ):
        assert name in lines[header]
    rows = lines[header + 1 : header + 4]
    assert [int(row.split()[0].replace(",", "")) for row in rows] == list(RATES)
    for row, point in zip(rows, summary["points"], strict=True):
        assert len(row.split()) == 9
        assert row.split()[-1] == mark(point)  # the run's verdicts, as its point holds them


def test_each_rate_has_its_own_complete_result_at_that_rate(swept):
    _, summary, _ = swept
    assert summary["kind"] == "sweep"
    assert [p["targetRate"] for p in summary["points"]] == list(RATES)
    for point in summary["points"]:
        result = json.loads(Path(point["result"]).read_text())
        assert result["workload"] == f"kafka sweep rate {point['targetRate']:.0f}"
        assert result["totalMessagesReceived"] == result["totalMessagesSent"]
        assert point["publishRate"] == pytest.approx(point["targetRate"], rel=0.05)
        assert point["endToEndLatency"]["p99"] == result["aggregatedEndToEndLatency99pct"] > 0
        assert point["publishLatency"]["p50"] == result["aggregatedPublishLatency50pct"] > 0
        assert not point["incomplete"]


def test_the_sweep_page_has_the_table_and_the_chart(swept):
    _, _, summary_path = swept
    page = summary_path.with_suffix(".html").read_text()
    assert page.count("<tr><td>") == len(RATES)
    assert "<svg" in page and "end-to-end latency" in page
