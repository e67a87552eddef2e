"""The one line an upstream server's failed start is reported with, and the bounded wait."""

import subprocess
import sys

import pytest

from loadgen.base.errors import LocalBrokerError
from loadgen.driver_api.local.server_start import await_serving, last_error


def test_the_last_error_line_wins_and_known_noise_is_passed_over(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("INFO up\n ERROR bind failed\n ERROR no lastMark yet\nINFO bye\n")
    assert last_error([log]) == "ERROR no lastMark yet"
    assert last_error([log], ignoring=["lastMark"]) == "ERROR bind failed"


def test_without_an_error_line_the_last_line_of_the_first_log_that_has_one(tmp_path):
    empty, output = tmp_path / "server.log", tmp_path / "stdout.log"
    empty.write_text("")
    output.write_text("Error: could not find main class\nbye\n")
    assert last_error([tmp_path / "missing.log", empty, output]) == "bye"
    assert last_error([tmp_path / "missing.log"]) == "no log"


def test_a_server_that_exits_is_reported_at_once_with_its_error_and_log(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("java.net.BindException: Address already in use\n")
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    process.wait()
    with pytest.raises(LocalBrokerError) as caught:
        await_serving("pulsar", "Apache Pulsar", process, lambda: False, 30, [log],
                      waiting_for="serve")  # fmt: skip
    assert str(caught.value).endswith(
        f"Apache Pulsar exited at start (exit 3): java.net.BindException: Address already in "
        f"use (log {log})"
    )


def test_a_server_that_never_serves_is_reported_when_the_wait_ends(tmp_path):
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(LocalBrokerError) as caught:
            await_serving("pravega", "Pravega", process, lambda: False, 0.3, [tmp_path / "x.log"],
                          waiting_for="answer at http://127.0.0.1:1")  # fmt: skip
    finally:
        process.kill()
        process.wait()
    assert "Pravega did not answer at http://127.0.0.1:1 within 0 s" in str(caught.value)
