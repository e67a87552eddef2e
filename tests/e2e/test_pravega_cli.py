"""``loadgen run`` and ``loadgen probe`` on Pravega as a user meets them with no server around:
a closed port and a silent one on loopback, real exit codes, nothing hanging.

The time bounds start where the product's promise starts, never at the interpreter's start
(its imports alone take seconds on a loaded machine): at the first request the silent
controller receives (the client now waits for an answer) or at the probe's first line.
"""

import signal
import sys
import time
from pathlib import Path

import pytest
import yaml

from harness.timing import Watch, run_watched
from loadgen.driver_api.local.process import free_port

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
DRIVER = REPO / "configs" / "drivers" / "pravega.yaml"
WORKLOAD = REPO / "configs" / "workloads" / "1-topic-1-partition-1kb.yaml"


def driver_file(tmp_path, port, timeout_s=None):
    """The shipped pravega.yaml pointed at ``port`` (and a timeout, if given)."""
    config = yaml.safe_load(DRIVER.read_text())
    config["client"]["controllerURI"] = f"tcp://127.0.0.1:{port}"
    if timeout_s is not None:
        config["client"]["timeoutSeconds"] = timeout_s
    path = tmp_path / "pravega.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def loadgen(*args, cwd):
    return run_watched(loadgen_command(*args), cwd=cwd)


def loadgen_command(*args):
    return [sys.executable, "-m", "loadgen", *args]


def test_a_run_against_a_closed_controller_port_exits_3_at_once_naming_the_uri(tmp_path, start_up):
    port = free_port()
    driver = driver_file(tmp_path, port)
    started = time.monotonic()
    done = loadgen("run", "-d", str(driver), str(WORKLOAD), "-o", "out", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert f"tcp://127.0.0.1:{port}" in done.stderr
    assert "no TCP connection to the controller" in done.stderr
    assert "Traceback" not in done.stderr
    # two interpreters start (the CLI, its worker), then nothing is awaited: not the 30-s
    # control-plane timeout, not the 1-s connect probe on a refusal
    assert done.said("error: ") - started < 2 * start_up + 1


def test_a_run_against_a_silent_controller_exits_3_within_its_timeout(tmp_path, silent, start_up):
    driver = driver_file(tmp_path, silent.port, timeout_s=2)
    done = loadgen("run", "-d", str(driver), str(WORKLOAD), "-o", "out", cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert f"tcp://127.0.0.1:{silent.port}: listing scopes: no answer within 2 s" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.said("error: ") - silent.wait_for_request(0) < 2 + start_up


def test_ctrl_c_while_a_silent_controller_is_awaited_ends_the_run_at_once(
    tmp_path, silent, start_up
):
    driver = driver_file(tmp_path, silent.port, timeout_s=30)
    run = Watch(loadgen_command("run", "-d", str(driver), str(WORKLOAD), "-o", "out"), tmp_path)
    try:
        silent.wait_for_request(60)  # set-up done, the scope listing under way
        interrupted = time.monotonic()
        run.child.send_signal(signal.SIGINT)
    finally:
        done = run.finish()
    assert done.returncode == 130, done.stderr
    assert done.said("result: ") - interrupted < start_up  # the partial result is written
    assert "Traceback" not in done.stderr


def test_probe_of_a_closed_port_exits_3_naming_the_uri(tmp_path, start_up):
    uri = f"tcp://127.0.0.1:{free_port()}"
    done = loadgen("probe", uri, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert uri in done.stderr
    # opening the driver, then a refused connect: the control process never starts
    assert done.said("error: ") - done.said("probing ") < start_up


def test_probe_of_a_silent_port_exits_3_within_its_3_second_budget(tmp_path, silent, start_up):
    uri = f"tcp://127.0.0.1:{silent.port}"
    done = loadgen("probe", uri, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert f"{uri}: listing scopes: no answer within 3 s" in done.stderr
    assert done.said("error: ") - silent.wait_for_request(0) < 3 + start_up
