"""``loadgen run URL`` as a user types it: exit codes and messages, no broker needed."""

import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e


def loadgen(*args):
    return subprocess.run(
        [sys.executable, "-m", "loadgen", *args], capture_output=True, text=True, timeout=60
    )


def test_dry_run_prints_the_files_and_touches_no_broker():
    # nothing listens on port 1: a connection attempt would exit 3
    done = loadgen("run", "kafka://127.0.0.1:1", "--rate", "10k", "--size", "4KiB", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "producerRate: 10000.0" in done.stdout and "messageSize: 4096" in done.stdout
    assert "bootstrap.servers=127.0.0.1:1" in done.stdout


def test_a_url_mixed_with_workload_files_exits_2_saying_so(tmp_path):
    workload = tmp_path / "w.yaml"
    workload.write_text("topics: 1\n")
    done = loadgen("run", "memory://", str(workload))
    assert done.returncode == 2
    assert (
        "URL" in done.stderr and "workload files" in done.stderr and "Traceback" not in done.stderr
    )


def test_a_bad_size_exits_2_naming_the_flag_and_the_forms():
    done = loadgen("run", "memory://", "--size", "4KiBs", "--dry-run")
    assert done.returncode == 2
    assert "--size" in done.stderr and "'4KiBs'" in done.stderr and "KiB" in done.stderr


def test_probe_takes_suffixes_and_a_plug_in_drivers_scheme():
    # the memory driver's memory:// comes through the same hook as any plug-in driver's
    done = loadgen("probe", "memory://", "--rate", "1k", "--size", "2KiB", "--duration", "1s")
    assert done.returncode == 0, done.stderr
    assert "1000 msg/s of 2048 B" in done.stderr
    sent, received, errors = map(int, re.findall(r"\d+", done.stdout.split("probe: ")[1])[:3])
    assert sent == received >= 900 and errors == 0
