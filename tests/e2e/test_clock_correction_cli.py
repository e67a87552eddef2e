"""`loadgen run --workers` with a consumer's worker whose clock is 250 ms ahead (libfaketime):
its measured offset corrects every end-to-end latency, and the uncorrected ones stay beside."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from harness.faketime import INSTALL_HINT, faketime_installed, skewed_env
from loadgen.distributed.spawn import announced_url, start_worker_process, stop_worker_processes
from loadgen.pytest_plugin.require import unavailable
from loadgen.spec import load_yaml

pytestmark = pytest.mark.e2e

TOKEN = "t0ken-for-clock-tests"
SKEW_MS = 250.0
TRUE_CEILING_MS = SKEW_MS / 2
"""What a corrected e2e p50 stays below; an uncorrected one is at least SKEW_MS. Not tighter: on
a loaded 2-core host a consumer under libfaketime was seen 90 ms behind at the median
(bench/results/distributed-and-scaling.md, "Clock correction")."""
ONE_PARTITION = (
    Path(__file__).resolve().parents[2] / "configs/workloads/1-topic-1-partition-1kb.yaml"
)


@pytest.fixture(scope="module")
def workers():
    """Three workers on loopback: the second one's wall clock 250 ms ahead."""
    if not faketime_installed():
        unavailable(f"libfaketime is not installed ({INSTALL_HINT})")
    processes = [
        start_worker_process(TOKEN),
        start_worker_process(TOKEN, extra_env=skewed_env(SKEW_MS / 1000)),
        start_worker_process(TOKEN),
    ]
    try:
        deadline = time.monotonic() + 30
        yield [announced_url(p, deadline, "test worker") for p in processes]
    finally:
        stop_worker_processes(processes)


def _run(urls, kafka_broker, tmp_path):
    """A 3-s run: OMB's split puts the producer on the first worker, the consumer on the second.
    Returns the result, the path of its JSON, and the console (stderr)."""
    tmp_path.mkdir()
    driver = tmp_path / "kafka.yaml"
    driver.write_text(
        yaml.safe_dump({"name": "local", "driver": "kafka", **kafka_broker.driver_config})
    )
    workload = tmp_path / "skew.yaml"
    workload.write_text(yaml.safe_dump(load_yaml(ONE_PARTITION) | {"producerRate": 500}))
    out = tmp_path / "results"
    command = [sys.executable, "-m", "loadgen", "run", "--plain", "--no-report", "-o", str(out)]
    command += ["--workers", ",".join(urls), "--token", TOKEN, "-d", str(driver), str(workload)]
    command += ["--duration", "3s", "--warmup", "0", "--stats-interval", "1s"]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    [path] = sorted(out.glob("*.json"))
    return json.loads(path.read_text()), path, done.stderr


def test_a_consumer_clock_250_ms_ahead_is_corrected_and_the_uncorrected_figures_stay_beside(
    workers, kafka_broker, tmp_path
):
    plain, skewed_worker, _ = workers
    result, path, console = _run([plain, skewed_worker], kafka_broker, tmp_path / "skewed")
    run = result["run"]
    assert run["workerRoles"] == {plain: "producer", skewed_worker: "consumer"}
    # the worker's own Python read the faked clock: the coordinator measured it
    assert abs(run["clockOffsetsMs"][skewed_worker] - SKEW_MS) < 10
    assert abs(run["clockOffsetsMs"][plain]) < 10

    correction = run["clockCorrection"]
    assert correction["applied"] is True
    [pair] = correction["pairs"]
    assert (pair["producerWorker"], pair["consumerWorker"]) == (plain, skewed_worker)
    shift = pair["shiftMs"]
    assert abs(shift - SKEW_MS) < 10 and correction["maxShiftMs"] == abs(shift)
    assert 0 <= correction["boundMs"] == pair["boundMs"] < 5
    assert run["e2eClockSkewBoundMs"] == correction["boundMs"]  # what remains after correcting

    corrected = result["aggregatedEndToEndLatency50pct"]
    uncorrected = result["aggregatedEndToEndLatencyUncorrected50pct"]
    assert corrected < TRUE_CEILING_MS and uncorrected > SKEW_MS - 10
    # every message of the pair moved by the same shift: the medians differ by it (to within
    # the histogram's bucket width and the 3 decimals of shiftMs)
    assert abs(uncorrected - corrected - shift) < 0.05
    assert result["aggregatedEndToEndFromIntendedLatency50pct"] < TRUE_CEILING_MS
    # the period lists are corrected too
    assert min(result["endToEndLatency50pct"]) < TRUE_CEILING_MS
    assert result["negativeEndToEnd"] == result["negativeEndToEndUncorrected"] == 0
    assert set(result["histograms"]) >= {"endToEnd", "endToEndUncorrected"}
    assert path.with_name(f"{path.stem}.endToEndUncorrected.hlog").exists()
    assert "Clock correction: end-to-end shifted" in console
    assert f"(uncorrected {uncorrected:.3f} ms)" in console

    unskewed, _, _ = _run([plain, workers[2]], kafka_broker, tmp_path / "unskewed")
    assert abs(unskewed["run"]["clockCorrection"]["maxShiftMs"]) < 10
    # the corrected median is the one a run without skew measures, within the bound and noise
    assert unskewed["aggregatedEndToEndLatency50pct"] < TRUE_CEILING_MS
