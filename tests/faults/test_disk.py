"""Disks that cannot take a run's files: refused before anything starts (exit 2), or, when one
fills mid-run, the files written to a fallback directory (exit 5) or printed (exit 6).

The disks are real tmpfs mounts (root only; skipped with the reason elsewhere, failed under
LOADGEN_REQUIRE_BROKERS=1). In the refused cases the driver points at a port nothing listens
on: had the run started, it would end with exit 3 (broker unreachable) instead of 2, after its
connect deadline. The mid-run cases fill the disk themselves once the run has written its
journal there, so the disk is full at the next interval whatever the machine's speed.
"""

import contextlib
import errno
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.e2e.test_cli import loadgen
from tests.faults.test_bad_input import GOOD as WORKLOAD
from tests.faults.test_bad_input import KAFKA as CLOSED_KAFKA

from loadgen.base import hdr
from loadgen.formats.hlog import hlog_path
from loadgen.pytest_plugin.require import unavailable

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
MEMORY = REPO / "configs/drivers/memory.yaml"

REFUSED_WITHIN_CPU_S = 5.0
"""The CPU the refusing command may use: Python and loadgen's imports take ~0.8 s. CPU, not
wall time: on a loaded machine the same command waited 9 s for a core (the exit code 2, not 3,
is what shows that no broker was contacted)."""


def cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


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


def refused(tmp_path: Path, option: str, target: Path, why: str) -> None:
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    (tmp_path / "d.yaml").write_text(CLOSED_KAFKA)
    args = ["run", "-d", str(tmp_path / "d.yaml"), str(tmp_path / "w.yaml")]
    args += ["--duration", "5s", "--warmup", "0", "--no-report"]
    args += ["-o", str(tmp_path / "out")] if option == "--pipeline" else []
    began = cpu_of_children()
    done = loadgen(*args, option, str(target), cwd=tmp_path)
    took = cpu_of_children() - began
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output
    for fragment in (option, str(target), why):
        assert fragment in output, f"{fragment!r} not in: {output}"
    assert took < REFUSED_WITHIN_CPU_S, f"refused after {took:.1f} s of CPU: {output}"
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


def start_filling_run(tmp_path: Path, out: Path, mode: str, env: dict[str, str]):
    """A 4 s memory run into ``out`` (its CSV too), filled up once the run's journal is there."""
    (tmp_path / "w.yaml").write_text(WORKLOAD.replace("producerRate: 100", "producerRate: 500"))
    command = [sys.executable, "-m", "loadgen", "run", "-d", str(MEMORY), str(tmp_path / "w.yaml")]
    command += ["-o", str(out), "--duration", "4s", "--warmup", "0", "--stats-interval", "1s"]
    command += ["--processes", "1", "--no-report", "--csv", str(out / "intervals.csv"), mode]
    child = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    )
    deadline = time.monotonic() + 30
    while not list(out.glob("*.journal")):
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "no journal after 30 s"
        time.sleep(0.05)
    fill(out)
    stdout, stderr = child.communicate(timeout=90)
    assert "Traceback" not in stderr, stderr
    return child.returncode, stdout, stderr


def fill(directory: Path) -> None:
    handle = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(handle, bytes(4096))
    except OSError as error:
        assert error.errno == errno.ENOSPC, error
    finally:
        os.close(handle)


def hlog_total(path: Path, metric: str) -> int:
    lines = [line for line in path.read_text().splitlines() if line[:1].isdigit()]
    return sum(hdr.decode(metric, line.split(",")[3]).total for line in lines)


def test_a_disk_that_fills_mid_run_sends_the_files_to_the_fallback(tmp_path):
    fallback = tmp_path / "cache" / "loadgen" / "results"
    with tmpfs(tmp_path / "small", "size=256k") as small:
        code, stdout, stderr = start_filling_run(
            tmp_path, small, "--json-lines", {"XDG_CACHE_HOME": str(tmp_path / "cache")}
        )
        left = sorted(path.name for path in small.iterdir())
        places = (small / "intervals.csv", fallback / "intervals.csv")
        csv = [path.read_text() for path in places if path.is_file()]
    assert code == 5, stderr
    assert f"written to {fallback}, not {small}" in stderr
    [path] = fallback.glob("*.json")
    result = json.loads(path.read_text())
    output = result["run"]["output"]
    assert (output["asked"], output["writtenTo"]) == (str(small), str(fallback)), output
    assert result.get("incomplete") is not True
    assert result["totalMessagesReceived"] == result["totalMessagesSent"] > 1000
    records = [json.loads(line) for line in stdout.splitlines()]
    [summary] = [record for record in records if record["type"] == "summary"]
    assert summary["result"] == str(path)
    measured = [r for r in records if r["type"] == "interval" and r["phase"] == "measure"]
    assert len(measured) == len(result["publishRate"]) >= 3
    assert summary["e2e_ms"]["p99"] == result["aggregatedEndToEndLatency99pct"]
    for metric, histograms in result["histograms"].items():  # the hlogs hold every interval
        whole = hdr.decode(metric, histograms["aggregated"]).total
        assert hlog_total(hlog_path(path, metric), metric) == whole > 0, metric
    # the CSV is written after the run's files left the full disk, which freed it: either place
    [text] = csv
    assert len(text.splitlines()) == 1 + len(measured) + 1  # a header, a row each, the summary
    assert not list(fallback.glob("*.journal"))
    assert set(left) - {"intervals.csv"} == {"filler"}  # the run's files begun there are gone


@pytest.mark.parametrize(("mode", "stream"), [("--plain", "stdout"), ("--json-lines", "stderr")])
def test_with_no_place_left_the_result_is_printed(tmp_path, mode, stream):
    with (
        tmpfs(tmp_path / "small", "size=256k") as small,
        tmpfs(tmp_path / "cache", "ro,size=64k") as cache,
        tmpfs(tmp_path / "tmp", "ro,size=64k") as temporary,
    ):
        code, stdout, stderr = start_filling_run(
            tmp_path, small, mode, {"XDG_CACHE_HOME": str(cache), "TMPDIR": str(temporary)}
        )
    assert code == 6, stderr
    assert f"printed as one line of JSON on {stream}" in stderr
    printed = stdout if stream == "stdout" else stderr
    [result] = [json.loads(line) for line in printed.splitlines() if line.startswith('{"')]
    assert result["run"]["output"]["writtenTo"] is None
    assert result["totalMessagesReceived"] == result["totalMessagesSent"] > 1000
    if mode == "--json-lines":  # stdout carries the records only, as it promises
        assert all("type" in json.loads(line) for line in stdout.splitlines())


def test_a_sweep_whose_disk_fills_keeps_every_point_and_its_summary_in_the_fallback(tmp_path):
    """A sweep's end-of-run file is its summary: it goes where the points' results went."""
    fallback = tmp_path / "cache" / "loadgen" / "results"
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    command = [sys.executable, "-m", "loadgen", "sweep", str(tmp_path / "w.yaml")]
    command += ["-d", str(MEMORY), "--rates", "200,400", "--duration", "3s", "--warmup", "0"]
    command += ["--stats-interval", "1s", "--processes", "1", "--plain"]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    with tmpfs(tmp_path / "small", "size=256k") as small:
        child = subprocess.Popen(
            [*command, "-o", str(small)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        deadline = time.monotonic() + 30
        while not list(small.glob("*.journal")):  # the first point is running
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "no journal after 30 s"
            time.sleep(0.05)
        fill(small)
        _, stderr = child.communicate(timeout=120)
        left = sorted(path.name for path in small.iterdir())
    assert "Traceback" not in stderr, stderr
    assert child.returncode == 5, stderr
    [summary_path] = fallback.glob("*-sweep-Memory-*.json")
    summary = json.loads(summary_path.read_text())
    assert [point["targetRate"] for point in summary["points"]] == [200, 400]
    for point in summary["points"]:
        assert Path(point["result"]).parent == fallback, point
        result = json.loads(Path(point["result"]).read_text())
        assert not point["incomplete"] and result.get("incomplete") is not True
        assert result["totalMessagesReceived"] == result["totalMessagesSent"] > 0
    assert f"sweep: {summary_path}" in stderr
    assert left == ["filler"]  # nothing of the sweep stayed on the full disk, its summary neither
