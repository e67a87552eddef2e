"""The image as users run it: a worker container carrying a coordinator's run, recording with the
compiled engine its build stage built (no compiler in the image itself), and every client.

Excluded from the default ``pytest`` run (marker ``image``); .ci/run runs it as its own step:
``python -m pytest -m image tests/image``.
"""

import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from loadgen.driver_api.driver_file import load_driver_spec
from loadgen.driver_api.local.process import free_port, port_open
from loadgen.spec import load_yaml
from loadgen_drivers.kafka.local.tansu import tansu_driver_config

pytestmark = [pytest.mark.image, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
SECONDS = 5
WORKLOAD = REPO / "deploy/workload.yaml"  # the compose file's, cut to SECONDS


@pytest.fixture
def worker(podman, image):
    """A worker container on the host network, bound to a free loopback port; its URL and token."""
    port, token = free_port(), secrets.token_urlsafe(16)
    name = f"loadgen-test-worker-{os.getpid()}"
    podman(
        "run", "--detach", "--name", name, "--network", "host", "-e", "LOADGEN_TOKEN",
        image, "worker", "--bind", f"127.0.0.1:{port}",
        env={"LOADGEN_TOKEN": token},  # `-e NAME` passes it on: no command line shows it
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not port_open(port):
            state = podman("inspect", "--format", "{{.State.Status}}", name).stdout.strip()
            if state != "running" or time.monotonic() > deadline:
                pytest.fail(f"worker container {state}:\n{podman.run('logs', name).stderr}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}", token
    finally:
        podman.run("rm", "--force", "--time", "5", name)


def test_a_worker_container_carries_a_coordinators_run(worker, kafka_broker, tmp_path):
    url, token = worker
    driver = tmp_path / "kafka.yaml"
    driver.write_text(
        yaml.safe_dump(
            {"name": "Kafka", "driver": "kafka", **tansu_driver_config(kafka_broker.address)}
        )
    )
    done = subprocess.run(
        [
            sys.executable, "-m", "loadgen", "run", "--workers", url, "--token", token,
            "-d", str(driver), str(WORKLOAD), "--duration", f"{SECONDS}s", "--warmup", "0",
            "--stats-interval", "1s", "-o", str(tmp_path / "out"), "--no-report", "-q",
        ],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [path] = (tmp_path / "out").glob("*.json")
    result = json.loads(path.read_text())

    assert result["run"]["workers"] == [url]
    assert result["run"]["recorderEngines"] == {
        url: "c"
    }  # the worker's own: loadgen.engine._hotpath
    totals = result["run"]["workerTotals"][url]
    sent, rate = result["totalMessagesSent"], load_yaml(WORKLOAD)["producerRate"]
    assert 0.95 * rate * SECONDS <= sent <= (SECONDS + 1) * rate  # open loop: the schedule's count
    assert (totals["sent"], totals["received"]) == (sent, sent)
    assert result["totalMessagesReceived"] == sent
    assert (result["totalLost"], result["totalDuplicates"], result["totalPublishErrors"]) == (
        0,
        0,
        0,
    )
    assert token not in done.stdout + done.stderr + path.read_text()


def test_the_image_carries_the_compiled_recorders_but_no_compiler(podman, image):
    """The build stage compiled ``loadgen.engine._hotpath``; the runtime stage is the base as
    it was."""
    script = (
        "python -c 'import loadgen.engine._hotpath' && echo imported;"
        " for tool in gcc cc c99 x86_64-linux-gnu-gcc; do command -v $tool; done; true"
    )
    done = podman.run("run", "--rm", "--entrypoint", "sh", image, "-c", script)
    assert done.returncode == 0, done.stderr
    # a compiler found would print its path after "imported"
    assert done.stdout.split() == ["imported"], done.stdout + done.stderr


def test_the_image_carries_every_drivers_client(podman, image):
    """`loadgen validate` loads each driver, so a missing client (an extra) fails it (exit 2)."""
    files = sorted((REPO / "configs/drivers").glob("*.yaml"))
    assert {load_driver_spec(f).kind for f in files} >= {"kafka", "rabbitmq", "pulsar", "pravega"}
    inside = [f"/opt/loadgen/configs/drivers/{f.name}" for f in files]
    done = podman.run("run", "--rm", image, "validate", *inside)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(line.split()[-1] for line in done.stdout.splitlines()) == inside


def test_the_image_runs_as_a_non_root_user_with_the_worker_by_default(podman, image):
    config = json.loads(podman("image", "inspect", image).stdout)[0]["Config"]
    assert config["Entrypoint"] == ["loadgen"]
    assert config["Cmd"] == ["worker", "--bind", "0.0.0.0:8080"]
    uid = podman("run", "--rm", "--entrypoint", "id", image, "-u").stdout.strip()
    assert uid != "0"


def test_the_drivers_import_as_loadgen_drivers_only(podman, image):
    """The drivers' folder is ``src/drivers``; an installed loadgen has them as
    ``loadgen_drivers`` and leaves the top-level name ``drivers`` to whoever else uses it."""
    script = (
        "python -c 'import loadgen_drivers.kafka, loadgen_drivers.rabbitmq' && echo ours;"
        " python -c 'import drivers' 2>/dev/null || echo free"
    )
    done = podman.run("run", "--rm", "--entrypoint", "sh", image, "-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ours", "free"], done.stdout + done.stderr
