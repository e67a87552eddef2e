"""A driver from another package works everywhere a built-in one does, with no change to loadgen.

tests/plugin_driver/ is that package (the memory driver renamed ``echo``, with its own URL
scheme, OMB driverClass and client distribution). It is installed into a scratch folder, never
into the environment, and every command runs as a subprocess with that folder on PYTHONPATH.
"""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from loadgen.distributed.spawn import announced_url, start_worker_process, stop_worker_processes
from loadgen.driver_api.local.process import free_port

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "tests" / "plugin_driver"
VERSION = "0.3.1"  # tests/plugin_driver/pyproject.toml
TOKEN = "t0ken-for-plugin-tests"
WORKLOAD = dict(
    name="echo workload", topics=1, partitionsPerTopic=2, messageSize=128, producersPerTopic=1,
    producerRate=200, subscriptionsPerTopic=1, consumerPerSubscription=1, testDurationMinutes=1,
)  # fmt: skip


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory):
    """PYTHONPATH with the installed echo package first, then this checkout's sources."""
    scratch = tmp_path_factory.mktemp("echo")
    source = shutil.copytree(PACKAGE, scratch / "source")  # the build leaves files beside it
    target = scratch / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    subprocess.run(
        [*pip, "--target", str(target), str(source)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return os.pathsep.join([str(target), str(REPO / "src")])


@pytest.fixture
def files(tmp_path):
    (tmp_path / "echo.yaml").write_text("name: Echo\ndriver: echo\n")
    (tmp_path / "omb.yaml").write_text(
        "name: Echo\ndriverClass: org.example.echo.EchoBenchmarkDriver\n"
    )
    (tmp_path / "typo.yaml").write_text("name: Echo\ndriver: echo\npollIntervalMS: 1\n")
    (tmp_path / "workload.yaml").write_text(yaml.safe_dump(WORKLOAD))
    return tmp_path


def loadgen(*args, cwd, pythonpath, timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "loadgen", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONPATH": pythonpath},
    )


def the_result(folder):
    [path] = Path(folder).glob("*.json")
    return json.loads(path.read_text())


def test_validate_knows_the_driver_by_name_and_by_omb_class_and_checks_its_fields(
    plugin_path, files
):
    done = loadgen(
        "validate", "echo.yaml", "omb.yaml", "typo.yaml", cwd=files, pythonpath=plugin_path
    )
    assert done.returncode == 2  # for typo.yaml only
    assert done.stdout.count("ok") == 2, done.stdout
    assert "typo.yaml" in done.stderr and "pollIntervalMS" in done.stderr
    assert "echo.yaml" not in done.stderr and "omb.yaml" not in done.stderr


def test_a_run_records_the_version_of_the_drivers_client(plugin_path, files):
    done = loadgen(
        "run", "-d", "echo.yaml", "workload.yaml", "--duration", "2s", "--warmup", "0",
        "--stats-interval", "1s", "-o", "out", cwd=files, pythonpath=plugin_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = the_result(files / "out")
    assert result["run"]["clientVersions"]["loadgen-echo"] == VERSION
    assert result["run"]["driver"]["driver"] == "echo"
    assert result["totalMessagesSent"] > 0
    assert result["totalMessagesReceived"] == result["totalMessagesSent"]


def test_a_url_run_and_a_probe_find_the_driver_by_its_scheme(plugin_path, files):
    run = loadgen(
        "run", "echo://anywhere", "--rate", "100", "--duration", "1s", "-o", "out",
        cwd=files, pythonpath=plugin_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert the_result(files / "out")["run"]["driver"]["name"] == "Echo"  # its display name
    probe = loadgen(
        "probe", "echo://anywhere", "--rate", "50", "--duration", "1s", "--json",
        cwd=files, pythonpath=plugin_path,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr
    summary = json.loads(probe.stdout.splitlines()[-1])
    assert summary["summary"] and summary["sent"] > 0
    assert summary["received"] == summary["sent"]


def test_a_worker_process_loads_the_driver_too(plugin_path, files):
    worker = start_worker_process(TOKEN, extra_env={"PYTHONPATH": plugin_path})
    try:
        url = announced_url(worker, time.monotonic() + 30, "echo worker")
        done = loadgen(
            "run", "-d", "echo.yaml", "workload.yaml", "--workers", url, "--token", TOKEN,
            "--duration", "2s", "--warmup", "0", "--stats-interval", "1s", "-o", "out",
            cwd=files, pythonpath=plugin_path,
        )  # fmt: skip
    finally:
        stop_worker_processes([worker])
    assert done.returncode == 0, done.stderr
    result = the_result(files / "out")
    assert result["run"]["workers"] == [url]
    assert result["totalMessagesSent"] > 0
    assert result["totalMessagesReceived"] == result["totalMessagesSent"]


def test_the_pytest_plugin_runs_load_through_the_driver(plugin_path, tmp_path):
    (tmp_path / "test_echo.py").write_text(
        "import loadgen\n\n"
        "def test_echo(loadgen_run):\n"
        "    workload = {'topics': 1, 'partitionsPerTopic': 1, 'messageSize': 64,\n"
        "                'subscriptionsPerTopic': 1, 'consumerPerSubscription': 1,\n"
        "                'producersPerTopic': 1, 'producerRate': 100, 'testDurationMinutes': 1}\n"
        "    result = loadgen_run(workload, loadgen.driver('echo'), duration=1)\n"
        "    assert result.sent > 0 and result.sent == result.received\n"
        "    assert result.document['run']['clientVersions']['loadgen-echo'] == '0.3.1'\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_echo.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": plugin_path},
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "1 passed" in done.stdout


def test_the_pytest_plugin_starts_the_broker_the_driver_declares(plugin_path, tmp_path):
    (tmp_path / "test_echo_broker.py").write_text(
        "def test_broker(loadgen_broker):\n"
        "    assert loadgen_broker.kind == 'echo'\n"
        "    assert loadgen_broker.address.startswith('127.0.0.1:')\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_echo_broker.py",
         "--loadgen-broker", "echo"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": plugin_path},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:]
    assert "1 passed" in done.stdout


def test_loadgen_brokers_starts_stops_and_shows_the_broker_the_driver_declares(
    plugin_path, tmp_path, monkeypatch
):
    env = {"cwd": tmp_path, "pythonpath": plugin_path}
    monkeypatch.setenv("LOADGEN_STATE_DIR", str(tmp_path / "state"))  # loadgen() passes it on
    port = free_port()
    up = loadgen("brokers", "up", "echo", "--port", port, **env)
    try:
        assert up.returncode == 0, up.stderr
        assert f"echo up at 127.0.0.1:{port}" in up.stdout
        status = loadgen("brokers", "status", "echo", **env)
        assert status.returncode == 0 and "echo running" in status.stdout
    finally:
        down = loadgen("brokers", "down", "echo", **env)
    assert down.returncode == 0 and "echo stopped" in down.stdout
    after = loadgen("brokers", "status", "echo", **env)
    assert after.returncode == 1 and "echo not running" in after.stdout
    unknown = loadgen("brokers", "up", "echoo", **env)
    assert unknown.returncode == 2 and "echo" in unknown.stderr  # listed among the kinds
