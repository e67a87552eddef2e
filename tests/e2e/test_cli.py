"""The loadgen command as a user runs it: real processes, real tansu, real files."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loadgen.driver_api.local.process import free_port, process_alive
from loadgen.engine.stats import METRICS
from loadgen.pytest_plugin.require import unavailable
from loadgen_drivers.rabbitmq.local.server import rabbitmq_installed

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]

TINY_WORKLOAD = """\
name: tiny e2e
topics: 1
partitionsPerTopic: 4
messageSize: 512
useRandomizedPayloads: true
randomBytesRatio: 0.5
randomizedPayloadPoolSize: 100
subscriptionsPerTopic: 1
consumerPerSubscription: 1
producersPerTopic: 1
producerRate: 2000
testDurationMinutes: 1
warmupDurationMinutes: 0
"""


def loadgen(*args, cwd, timeout=120, env=None):
    return subprocess.run(
        [sys.executable, "-m", "loadgen", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_WORKLOAD)
    return path


def results_in(directory):
    return [json.loads(p.read_text()) for p in sorted(Path(directory).glob("*.json"))]


def test_run_without_a_driver_starts_a_local_kafka_and_writes_an_omb_result(tiny, tmp_path):
    done = loadgen(
        "run", str(tiny), "--duration", "3s", "--stats-interval", "1s", "-o", "out", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "local Kafka broker" in done.stderr
    [result] = results_in(tmp_path / "out")
    assert result["workload"] == "tiny e2e" and result["driver"] == "Kafka"
    assert result["totalMessagesReceived"] == result["totalMessagesSent"] > 5000
    assert len(result["publishRate"]) == 3
    assert "e2e" in done.stdout.lower()
    [path] = (tmp_path / "out").glob("*.json")
    logs = sorted(p.name for p in (tmp_path / "out").glob("*.hlog"))
    assert logs == sorted(f"{path.stem}.{m}.hlog" for m in METRICS)
    lines = (tmp_path / "out" / f"{path.stem}.endToEnd.hlog").read_text().splitlines()
    assert len([line for line in lines if line[:1].isdigit()]) == 3  # one per measured interval
    report = tmp_path / "out" / f"{path.stem}.html"
    assert f"report: out/{report.name}" in done.stderr
    assert 'id="chart-distribution"' in report.read_text()


def test_misspelt_workload_field_exits_2_naming_file_and_field(tiny, tmp_path):
    tiny.write_text(TINY_WORKLOAD.replace("partitionsPerTopic", "partitionPerTopic"))
    done = loadgen("run", str(tiny), cwd=tmp_path)
    assert done.returncode == 2
    assert "tiny.yaml" in done.stderr and "partitionPerTopic" in done.stderr
    assert "partitionsPerTopic" in done.stderr  # the suggestion
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_stopping_during_measurement_writes_the_partial_result_and_exits_130(
    tiny, tmp_path, stop_signal
):
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "loadgen",
            "run",
            str(tiny),
            "--duration",
            "60s",
            "--stats-interval",
            "1s",
            "-o",
            "out",
        ],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = []
    deadline = time.monotonic() + 60
    while len(lines) < 2 and time.monotonic() < deadline:  # two measured intervals printed
        line = process.stdout.readline()
        if "measure" in line:
            lines.append(line)
    process.send_signal(stop_signal)
    stopped_at = time.monotonic()
    _, stderr = process.communicate(timeout=30)
    assert time.monotonic() - stopped_at < 10
    assert process.returncode == 130, stderr
    [result] = results_in(tmp_path / "out")
    assert result["incomplete"] is True and result["stopReason"] == "interrupted"
    assert len(result["publishRate"]) >= 2
    assert "partial result written" in stderr
    assert len(list((tmp_path / "out").glob("*.hlog"))) == len(METRICS)  # logs of the partial run
    assert not list((tmp_path / "out").glob("*.html"))  # no charts drawn on the stop budget
    [path] = (tmp_path / "out").glob("*.json")
    assert f"loadgen report {path.relative_to(tmp_path)}" in stderr  # how to draw them later
    drawn = loadgen("report", str(path), cwd=tmp_path)
    assert drawn.returncode == 0, drawn.stderr
    [report] = (tmp_path / "out").glob("*.html")  # the report, flagged as incomplete
    assert "Incomplete run: stopped early (interrupted)" in report.read_text()


def test_validate_accepts_every_shipped_config():
    files = sorted(str(p) for p in (REPO / "configs").rglob("*.yaml"))
    done = loadgen("validate", *files, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("ok") == len(files)


@pytest.mark.parametrize(
    "kind",
    ["kafka", "rabbitmq", "pulsar", "pravega", pytest.param("spark", marks=pytest.mark.pipeline)],
)
def test_brokers_up_status_down_manage_a_local_broker(tmp_path, kind):
    if kind == "rabbitmq" and not rabbitmq_installed():
        unavailable("rabbitmq-server is not installed")
    if kind == "spark" and shutil.which("java") is None:
        unavailable("no java on the PATH: a Spark standalone cluster cannot start")
    env = {**os.environ, "LOADGEN_STATE_DIR": str(tmp_path)}

    def brokers(*args):
        return subprocess.run(
            [sys.executable, "-m", "loadgen", "brokers", *args],
            capture_output=True,
            text=True,
            timeout=90,
            env=env,
        )

    port = free_port()
    up = brokers("up", kind, "--port", str(port))
    assert up.returncode == 0, up.stderr
    state = json.loads((tmp_path / f"{kind}.json").read_text())
    try:
        assert f"127.0.0.1:{port}" in brokers("status", kind).stdout
    finally:
        assert brokers("down", kind).returncode == 0
    assert brokers("status", kind).returncode == 1
    assert not any(process_alive(pid) for pid in (state["pid"], *state["helper_pids"]))


def test_a_failing_run_does_not_stop_the_next_one(tiny, tmp_path):
    dead = tmp_path / "dead.yaml"
    dead.write_text(
        "name: Dead\ndriver: rabbitmq\namqpUris: ['amqp://guest:guest@127.0.0.1:1/%2F']\n"
    )
    memory = tmp_path / "memory.yaml"
    memory.write_text("name: Memory\ndriver: memory\n")
    done = loadgen(
        "run",
        "-d",
        str(dead),
        "-d",
        str(memory),
        str(tiny),
        "--duration",
        "1s",
        "--stats-interval",
        "1s",
        "-o",
        "out",
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    assert "127.0.0.1:1" in done.stderr
    [result] = results_in(tmp_path / "out")
    assert result["driver"] == "Memory" and result["totalMessagesSent"] > 0


def test_validate_exits_2_at_the_first_bad_file(tiny, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(TINY_WORKLOAD.replace("messageSize: 512", "messageSize: big"))
    done = loadgen("validate", str(tiny), str(bad), cwd=tmp_path)
    assert done.returncode == 2
    assert "ok" in done.stdout and "bad.yaml: messageSize: 'big' is not a size" in done.stderr


def test_an_unreachable_rabbitmq_exits_3_naming_the_uri_without_its_password(tiny, tmp_path):
    dead = tmp_path / "dead-rabbitmq.yaml"
    dead.write_text(
        f"name: Dead\ndriver: rabbitmq\namqpUris: ['amqp://guest:s3cret@127.0.0.1:{free_port()}']\n"
    )
    started = time.monotonic()
    done = loadgen("run", "-d", str(dead), str(tiny), cwd=tmp_path)
    assert time.monotonic() - started < 15
    assert done.returncode == 3, done.stderr
    assert "rabbitmq broker unreachable at amqp://guest:***@127.0.0.1:" in done.stderr
    assert "s3cret" not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr


def short_memory_run(workload, out):
    """``run`` arguments for 2 s of ``workload`` on the in-process broker, 1-s intervals."""
    driver = str(REPO / "configs/drivers/memory.yaml")
    return [
        "run",
        "-d",
        driver,
        str(workload),
        "--duration",
        "2s",
        "--stats-interval",
        "1s",
        "-o",
        str(out),
    ]


def test_on_a_terminal_the_run_shows_a_live_view_and_keeps_the_interval_lines(tiny, tmp_path):
    import pty

    parent, child = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "loadgen", *short_memory_run(tiny, tmp_path)],
        stdout=child,
        stderr=child,
        env={**os.environ, "COLUMNS": "160", "TERM": "xterm"},
    )
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(parent, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert process.wait(timeout=60) == 0
    os.close(parent)
    screen = b"".join(chunks).decode(errors="replace")
    assert "0:02" in screen and "measure" in screen  # the phase with its progress clock
    assert "p99.9 ms" in screen  # the dashboard's latency table
    assert screen.count("[measure] pub") == 2  # one line per interval, in the scrollback
    assert "Aggregated end-to-end" in screen


def test_json_lines_output_is_only_json_on_stdout(tiny, tmp_path):
    done = loadgen(*short_memory_run(tiny, tmp_path), "--json-lines", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [r["type"] for r in records]
    assert kinds.count("interval") == 2 and kinds[-1] == "summary"
    assert [r["phase"] for r in records if r["type"] == "phase"][:1] == ["setup"]
    assert Path(records[-1]["result"]).exists()


def test_two_output_modes_at_once_exit_2(tiny, tmp_path):
    done = loadgen("run", str(tiny), "--quiet", "--json-lines", cwd=tmp_path)
    assert done.returncode == 2
    assert "--quiet --json-lines" in done.stderr and "Traceback" not in done.stderr


def test_cpus_pins_the_run_and_the_result_says_where_it_ran(tiny, tmp_path):
    done = loadgen(*short_memory_run(tiny, tmp_path), "--cpus", "0", "--json-lines", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])["result"]
    assert json.loads(Path(result).read_text())["run"]["cpuAffinity"] == [0]


def test_cpus_outside_the_machine_exit_2_naming_the_option_and_the_usable_ones(tiny, tmp_path):
    done = loadgen(*short_memory_run(tiny, tmp_path), "--cpus", "0,4096", cwd=tmp_path)
    assert done.returncode == 2
    usable = sorted(os.sched_getaffinity(0))
    assert "--cpus: CPU 4096 is not available to this process" in done.stderr
    assert f"allowed: {usable[0]}-{usable[-1]})" in done.stderr or len(usable) == 1
    assert not list(tmp_path.glob("*.json"))  # refused before anything ran


# --help, a sweep asked two things at once, the embedded broker's announcement


@pytest.mark.parametrize("command", ["run", "sweep", "matrix", "probe", "worker"])
def test_help_ends_with_examples_of_the_command_itself(command):
    done = loadgen(command, "--help", cwd=REPO)
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
    shown = loadgen(command, "--help", cwd=REPO).stdout
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


def test_a_run_without_a_driver_says_it_started_and_stopped_a_local_tansu(tiny, tmp_path):
    done = loadgen(
        "run",
        str(tiny),
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
