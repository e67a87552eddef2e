"""``loadgen run`` and ``loadgen probe`` on Pravega as a user meets them with no server around:
a closed port and a silent one on loopback, real exit codes, nothing hanging."""

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from loadgen.testing.process import free_port

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "configs" / "drivers" / "pravega.yaml"
WORKLOAD = REPO / "configs" / "workloads" / "1-topic-1-partition-1kb.yaml"


@pytest.fixture
def silent_port():
    """A port that accepts connections (the kernel's backlog) and never says anything."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield listener.getsockname()[1]


def driver_file(tmp_path, port, timeout_s=None):
    """The shipped pravega.yaml pointed at ``port`` (and a timeout, if given)."""
    config = yaml.safe_load(DRIVER.read_text())
    config["client"]["controllerURI"] = f"tcp://127.0.0.1:{port}"
    if timeout_s is not None:
        config["client"]["timeoutSeconds"] = timeout_s
    path = tmp_path / "pravega.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def loadgen(*args, cwd, timeout=60):
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "loadgen", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return done, time.monotonic() - started


def test_a_run_against_a_closed_controller_port_exits_3_at_once_naming_the_uri(tmp_path):
    port = free_port()
    driver = driver_file(tmp_path, port)
    done, seconds = loadgen("run", "-d", str(driver), str(WORKLOAD), "-o", "out", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert f"tcp://127.0.0.1:{port}" in done.stderr
    assert "no TCP connection to the controller" in done.stderr
    assert "Traceback" not in done.stderr
    assert seconds < 10


def test_a_run_against_a_silent_controller_exits_3_within_its_timeout(tmp_path, silent_port):
    driver = driver_file(tmp_path, silent_port, timeout_s=2)
    done, seconds = loadgen("run", "-d", str(driver), str(WORKLOAD), "-o", "out", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert f"tcp://127.0.0.1:{silent_port}: listing scopes: no answer within 2 s" in done.stderr
    assert "Traceback" not in done.stderr
    assert seconds < 2 + 4  # the timeout, plus interpreter start and the control process


def test_ctrl_c_while_a_silent_controller_is_awaited_ends_the_run_at_once(tmp_path, silent_port):
    driver = driver_file(tmp_path, silent_port, timeout_s=30)
    process = subprocess.Popen(
        [sys.executable, "-m", "loadgen", "run", "-d", str(driver), str(WORKLOAD), "-o", "out"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(2.5)  # set-up done, the scope listing under way
        interrupted = time.monotonic()
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=10)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    assert time.monotonic() - interrupted < 2
    assert "Traceback" not in stderr


def test_probe_of_a_closed_port_exits_3_naming_the_uri(tmp_path):
    uri = f"tcp://127.0.0.1:{free_port()}"
    done, seconds = loadgen("probe", uri, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert uri in done.stderr
    assert seconds < 5


def test_probe_of_a_silent_port_exits_3_within_its_3_second_budget(tmp_path, silent_port):
    uri = f"tcp://127.0.0.1:{silent_port}"
    done, seconds = loadgen("probe", uri, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert f"{uri}: listing scopes: no answer within 3 s" in done.stderr
    assert seconds < 3 + 4
