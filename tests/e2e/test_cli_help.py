"""What `loadgen ... --help` teaches, a sweep asked two things at once, and the embedded broker's
announcement: the command as a user meets it (real processes; only the last starts a broker)."""

import re
import socket
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e

WORKLOAD = """\
name: help e2e
topics: 1
partitionsPerTopic: 1
messageSize: 100
subscriptionsPerTopic: 1
consumerPerSubscription: 1
producersPerTopic: 1
producerRate: 200
testDurationMinutes: 1
warmupDurationMinutes: 0
"""


def loadgen(*args, cwd=None, timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "loadgen", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize("command", ["run", "sweep", "matrix", "probe", "worker"])
def test_help_ends_with_examples_of_the_command_itself(command):
    done = loadgen(command, "--help")
    assert done.returncode == 0, done.stderr
    examples = done.stdout.split("Examples:", 1)[1].splitlines()
    assert sum(f"loadgen {command} " in line for line in examples) >= 2


@pytest.mark.parametrize(
    ("command", "placeholders"),
    [
        ("run", ["--duration DURATION", "--rate RATE", "--size SIZE", "--processes N"]),
        ("sweep", ["--warmup DURATION", "--rates RATE,...", "--search RATE:RATE", "--max-runs N"]),
        ("probe", ["--duration DURATION", "--rate RATE", "--size SIZE", "--max-p99 MS"]),
    ],
)
def test_options_show_typed_placeholders_not_text(command, placeholders):
    shown = loadgen(command, "--help").stdout
    for placeholder in placeholders:
        assert re.search(rf"{re.escape(placeholder)}\s", shown), placeholder
    assert not re.search(r"--(duration|warmup|rate|size) TEXT", shown)


def test_a_sweep_given_both_rates_and_a_search_is_refused_naming_both(tmp_path):
    done = loadgen(
        "sweep",
        "missing.yaml",
        "--rates",
        "1k,2k",
        "--search",
        "1k:10k",
        "-o",
        str(tmp_path / "out"),
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert "--rates" in done.stderr and "--search" in done.stderr
    assert "tansu" not in done.stderr and not (tmp_path / "out").exists()  # nothing started


def test_a_run_without_a_driver_says_it_started_and_stopped_a_local_tansu(tmp_path):
    workload = tmp_path / "w.yaml"
    workload.write_text(WORKLOAD)
    done = loadgen(
        "run",
        str(workload),
        "--duration",
        "1s",
        "--stats-interval",
        "1s",
        "--quiet",
        "--no-report",
        "-o",
        str(tmp_path / "out"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    started = re.search(
        r"no -d given: started a local Kafka broker \(tansu, Kafka-compatible\) at "
        r"127\.0\.0\.1:(\d+) for this run",
        done.stderr,
    )
    assert started, done.stderr
    port = int(started.group(1))
    assert f"stopped the local Kafka broker (tansu) at 127.0.0.1:{port}" in done.stderr
    with socket.socket() as probe:  # stopped means stopped: nothing listens there any more
        assert probe.connect_ex(("127.0.0.1", port)) != 0
