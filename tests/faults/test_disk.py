"""Output directories that cannot take files: refused before anything starts (exit 2).

The read-only cases mount a real tmpfs (root only; skipped with the reason elsewhere, failed under
LOADGEN_REQUIRE_BROKERS=1). The driver points at a port nothing listens on: had the run started,
it would end with exit 3 (broker unreachable) instead of 2, after its connect deadline.
"""

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadgen.testing.require import unavailable

pytestmark = pytest.mark.e2e

WORKLOAD = """\
name: disk
topics: 1
partitionsPerTopic: 1
messageSize: 100
subscriptionsPerTopic: 1
consumerPerSubscription: 1
producersPerTopic: 1
producerRate: 100
testDurationMinutes: 1
"""
CLOSED_KAFKA = """\
name: Kafka
driver: kafka
commonConfig: bootstrap.servers=127.0.0.1:1
"""
REFUSED_WITHIN_S = 5.0
"""Python and loadgen's imports take ~1 s on a loaded 2-core machine; a run that got as far as
the broker would take its 10 s connect deadline."""


@contextlib.contextmanager
def tmpfs(directory: Path, options: str) -> Iterator[Path]:
    """A tmpfs mounted on ``directory`` with ``options`` for the block, unmounted after it."""
    directory.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        unavailable("mounting a tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(directory)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        unavailable(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=True)


def loadgen(
    *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess, float]:
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "loadgen", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=None if env is None else {**os.environ, **env},
    )
    return done, time.monotonic() - began


def refused(tmp_path: Path, option: str, target: Path, why: str) -> None:
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    (tmp_path / "d.yaml").write_text(CLOSED_KAFKA)
    args = ["run", "-d", str(tmp_path / "d.yaml"), str(tmp_path / "w.yaml")]
    args += ["--duration", "5s", "--warmup", "0", "--no-report"]
    args += ["-o", str(tmp_path / "out")] if option == "--pipeline" else []
    done, took = loadgen(*args, option, str(target))
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output
    for fragment in (option, str(target), why):
        assert fragment in output, f"{fragment!r} not in: {output}"
    assert took < REFUSED_WITHIN_S, f"refused after {took:.1f} s: {output}"
    assert not list(tmp_path.glob("**/*.json")), "a result was written"


@pytest.mark.parametrize("option", ["-o", "--pipeline"])
def test_an_output_that_is_a_regular_file_is_refused_at_start(tmp_path, option):
    target = tmp_path / "taken"
    target.write_text("a file, not a directory\n")
    refused(tmp_path, option, target, "is a regular file")


@pytest.mark.parametrize("option", ["-o", "--pipeline"])
def test_an_output_whose_parent_is_a_file_is_refused_at_start(tmp_path, option):
    (tmp_path / "taken").write_text("a file, not a directory\n")
    refused(tmp_path, option, tmp_path / "taken" / "sub" / "out", f"parent {tmp_path / 'taken'}")


@pytest.mark.parametrize("option", ["-o", "--pipeline"])
def test_an_output_on_a_read_only_mount_is_refused_at_start(tmp_path, option):
    with tmpfs(tmp_path / "ro", "ro,size=64k") as mount:
        refused(tmp_path, option, mount / "out", "read-only file system")
