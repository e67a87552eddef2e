"""``loadgen brokers up pravega`` as a user meets it: the printed controller URI in the shipped
configs/drivers/pravega.yaml carries OMB's tailing workload with exact counts."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from loadgen.driver_api.local.process import free_port

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
WORKLOAD = REPO / "configs" / "workloads" / "1-topic-16-partitions-1kb-10k.yaml"


def loadgen(*args, env, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "loadgen", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def test_the_printed_controller_uri_in_the_shipped_driver_file_runs_the_tailing_workload(tmp_path):
    env = {**os.environ, "LOADGEN_STATE_DIR": str(tmp_path / "state")}
    up = loadgen("brokers", "up", "pravega", "--port", str(free_port()), env=env)
    assert up.returncode == 0, up.stderr
    [uri] = re.findall(r"pravega up at (tcp://127\.0\.0\.1:\d+) ", up.stdout)
    try:
        config = yaml.safe_load((REPO / "configs" / "drivers" / "pravega.yaml").read_text())
        config["client"]["controllerURI"] = uri
        driver = tmp_path / "pravega.yaml"
        driver.write_text(yaml.safe_dump(config))
        done = loadgen(
            "run", "-d", str(driver), str(WORKLOAD), "--duration", "5s", "--warmup", "0s",
            "--quiet", "--no-report", "-o", str(tmp_path / "out"), env=env,
        )  # fmt: skip
    finally:
        assert loadgen("brokers", "down", "pravega", env=env).returncode == 0
    assert done.returncode == 0, done.stderr[-3000:]
    [path] = (tmp_path / "out").glob("*.json")
    result = json.loads(path.read_text())
    assert result["totalMessagesSent"] == result["totalMessagesReceived"] > 40_000
    assert (result["totalLost"], result["totalDuplicates"], result["totalPublishErrors"]) == (
        0,
        0,
        0,
    )
