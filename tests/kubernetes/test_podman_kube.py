"""The chart's workers and coordinator run for real under ``podman kube play``, in their Pod
forms (:mod:`tests.kubernetes.podform`): the run completes with exact counts and lands on the
results volume, the coordinator's exit code is the run's, a missed --slo is exit 1, and a worker
that never becomes ready (no address, or nothing listening) is exit 3 at --workers-wait, named.

Each pod has an address of its own on a podman network, as on a cluster: every worker binds
0.0.0.0:8080 as the chart says, which pods sharing the host's network could not. The network is
a bridge on a block of 198.51.100.0/24 taken as :mod:`harness.hosts` takes one (podman 4.3 puts
no pod in a namespace made outside it), held up by an empty pod from the start, so the broker,
tansu, listens on the bridge's address before any worker plays. Excluded from the default run
(marker ``image``: it builds the image): ``python -m pytest -m image tests/kubernetes``.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from tests.kubernetes.chart import REPO, one, parse
from tests.kubernetes.podform import container_name, coordinator_pod, kube_yaml, worker_pods

from harness.hosts import FIRST_HOST, claimed_block, pin_bridge_address
from loadgen.pytest_plugin.fixtures import start_local_broker
from loadgen.spec import load_yaml
from loadgen_drivers.kafka.local.tansu import tansu_driver_config

pytestmark = [pytest.mark.image, pytest.mark.timeout(900)]

RELEASE = f"lgk{os.getpid()}"
"""Every pod, volume and secret made here carries it (``<RELEASE>-loadgen-...``)."""
WORKERS = 2
SECONDS = 5
WORKERS_WAIT_S = 60
UNREADY_WAIT_S = 10
START_SLACK_S = 20
"""A coordinator container's own start and stop beyond its deadline (podman, Python, loadgen)."""
RUN_TIMEOUT_S = 180
STATE = "{{.State.StartedAt.UnixNano}} {{.State.FinishedAt.UnixNano}} {{.State.ExitCode}}"
WORKLOAD = load_yaml(REPO / "deploy/workload.yaml") | {"producerRate": 2000}
"""The compose file's workload, the chart's default, at 2000 msg/s for SECONDS."""


@dataclass(frozen=True)
class Finished:
    exit_code: int
    log: str
    seconds: float
    """From the container's start to its exit, as podman saw them."""
    results: dict[str, bytes]
    """Every file on the results volume, by its path there."""


@pytest.fixture(scope="module")
def nothing_left_behind(podman) -> Iterator[None]:
    """Requested first, so it checks last: no pod, container, volume, secret or network of ours
    left."""
    yield
    listings = {
        "ps": "{{.Names}}",
        "pod": "{{.Name}}",
        "volume": "{{.Name}}",
        "secret": "{{.Name}}",
        "network": "{{.Name}}",
    }
    for what, field in listings.items():
        args = ("ps", "--all") if what == "ps" else (what, "ls")
        names = podman(*args, "--format", field).stdout
        assert RELEASE not in names, f"podman {' '.join(args)} still lists ours:\n{names}"


@dataclass(frozen=True)
class PodNetwork:
    name: str
    address: str
    """The host's address on the bridge: the broker binds it."""
    pods: tuple[str, ...]
    """An address for each pod: the workers', then the coordinator's."""


@pytest.fixture(scope="module")
def network(podman, nothing_left_behind) -> Iterator[PodNetwork]:
    """A podman network on a free block, its bridge up (a holder pod on the block's last
    address) before the block's claim ends; removed after, holder first."""
    holder = f"{RELEASE}-bridge"
    try:
        with claimed_block() as block:
            addresses = [str(block[FIRST_HOST + i]) for i in range(WORKERS + 2)]
            podman("network", "create", "--disable-dns", "--subnet", str(block),
                   "--gateway", str(block[1]), RELEASE)  # fmt: skip
            podman("pod", "create", "--name", holder, "--network", RELEASE,
                   "--ip", addresses[-1])  # fmt: skip
            podman("pod", "start", holder)
        pin_bridge_address(podman("network", "inspect", "--format", "{{.NetworkInterface}}",
                           RELEASE).stdout.strip())  # fmt: skip
        yield PodNetwork(RELEASE, str(block[1]), tuple(addresses[:-1]))
    finally:
        podman.run("pod", "rm", "--force", holder)
        podman.run("network", "rm", "--force", RELEASE)


@pytest.fixture(scope="module")
def broker(request, network):
    started = start_local_broker(request.config, "kafka", host=network.address)
    yield started
    started.stop()


@pytest.fixture(scope="module")
def token_secret(podman, tmp_path_factory) -> Iterator[str]:
    """The workers' token as an existing Secret (token.existingSecret), held by podman: podman 4.3
    reads a secretKeyRef from a podman secret holding the Secret's ``data`` map (JSON, each
    value in base64), not the whole Secret object."""
    name = f"{RELEASE}-token"
    token = secrets.token_urlsafe(24)
    secret = {"token": base64.b64encode(token.encode()).decode()}
    path = tmp_path_factory.mktemp("secret") / "secret.json"
    path.write_text(json.dumps(secret))
    podman("secret", "create", name, str(path))
    path.unlink()
    try:
        yield name
    finally:
        podman.run("secret", "rm", name)


@pytest.fixture(scope="module")
def values(tmp_path_factory, image, broker, token_secret) -> Path:
    """The test's values: this image, two workers, tansu's settings with the bootstrap address
    from the coordinator's environment (as the default kafka.yaml takes it), a short run."""
    repository, tag = image.rsplit(":", 1)
    bootstrap = "${KAFKA_BOOTSTRAP_SERVERS}"  # expanded by the coordinator
    driver = {"name": "Kafka", "driver": "kafka", **tansu_driver_config(bootstrap)}
    settings = {
        "image": {"repository": repository, "tag": tag},
        "token": {"existingSecret": token_secret},
        "workers": {"replicas": WORKERS},
        "config": {"files": {"kafka.yaml": yaml.safe_dump(driver),
                             "workload.yaml": yaml.safe_dump(WORKLOAD)}},
        "coordinator": {
            "workersWait": f"{WORKERS_WAIT_S}s",
            "env": {"KAFKA_BOOTSTRAP_SERVERS": broker.address},
            "extraArgs": ["--duration", f"{SECONDS}s", "--warmup", "0", "--stats-interval", "1s"],
        },
        "results": {"pipeline": True},
    }  # fmt: skip
    path = tmp_path_factory.mktemp("values") / "values.yaml"
    path.write_text(yaml.safe_dump(settings))
    return path


def play(podman, tmp: Path, network: PodNetwork, address: str, *objects: dict) -> Path:
    """``podman kube play`` of ``objects`` at ``address`` on ``network``; the file, for
    ``--down``."""
    path = tmp / f"{objects[-1]['metadata']['name']}.yaml"
    path.write_text(kube_yaml(*objects))
    podman("kube", "play", "--network", network.name, "--ip", address, str(path), timeout=120)
    return path


@pytest.fixture(scope="module")
def workers(podman, helm, values, network, tmp_path_factory) -> Iterator[dict[str, str]]:
    """The StatefulSet's pods, each at an address of its own: DNS name -> address."""
    tmp = tmp_path_factory.mktemp("workers")
    statefulset = one(parse(helm.template(values, release=RELEASE)), "StatefulSet")
    pods = worker_pods(statefulset)
    played = []
    try:
        for pod, address in zip(pods, network.pods, strict=False):
            played.append(play(podman, tmp, network, address, pod))
        yield {
            f"{pod['spec']['hostname']}.{pod['spec']['subdomain']}": address
            for pod, address in zip(pods, network.pods, strict=False)
        }
    finally:
        for path in played:
            podman.run("kube", "play", "--down", str(path), timeout=60)


@pytest.fixture
def coordinate(
    podman, helm, values, network, workers, tmp_path
) -> Iterator[Callable[..., Finished]]:
    """``coordinate(hosts, **values)``: the Job's pod with these DNS names, run to its end on the
    last address; its exit code, log, duration and the results volume's files. Removed after,
    with the volumes podman made of its claim and its ConfigMap (``--down`` keeps them)."""
    played: list[tuple[Path, tuple[str, ...]]] = []

    def run(hosts: dict[str, str], **more: object) -> Finished:
        extra = tmp_path / "more.yaml"
        extra.write_text(yaml.safe_dump({"coordinator": more}))
        objects = parse(helm.template(values, extra, release=RELEASE))
        kinds = ("Job", "ConfigMap", "PersistentVolumeClaim")
        job, config, claim = (one(objects, kind) for kind in kinds)
        pod = coordinator_pod(job, hosts)
        volumes = (claim["metadata"]["name"], config["metadata"]["name"])
        played.append((play(podman, tmp_path, network, network.pods[-1], config, claim, pod),
                       volumes))  # fmt: skip
        name = container_name(pod)
        podman("wait", "--condition", "exited", name, timeout=RUN_TIMEOUT_S)
        state = podman("inspect", "--format", STATE, name).stdout.split()
        started, ended, exit_code = (int(field) for field in state)
        volume = claim["metadata"]["name"]
        root = Path(
            podman("volume", "inspect", "--format", "{{.Mountpoint}}", volume).stdout.strip()
        )
        logs = podman("logs", name)
        return Finished(
            exit_code=exit_code,
            log=logs.stdout + logs.stderr,
            seconds=(ended - started) / 1e9,
            results={
                str(f.relative_to(root)): f.read_bytes() for f in root.rglob("*") if f.is_file()
            },
        )

    yield run
    for path, volumes in played:
        podman.run("kube", "play", "--down", str(path), timeout=60)
        podman.run("volume", "rm", "--force", *volumes, timeout=60)


def result_of(finished: Finished) -> dict:
    [name] = [n for n in finished.results if "/" not in n and n.endswith(".json")]
    return json.loads(finished.results[name])


def test_the_run_completes_exactly_and_lands_on_the_volume(coordinate, workers, token_secret):
    finished = coordinate(workers, slo=["lost==0"])
    assert finished.exit_code == 0, finished.log
    result = result_of(finished)
    urls = [f"http://{host}:8080" for host in sorted(workers)]
    assert result["run"]["workers"] == urls
    sent = result["totalMessagesSent"]
    rate = WORKLOAD["producerRate"]
    assert 0.95 * rate * SECONDS <= sent <= (SECONDS + 1) * rate  # open loop: the schedule's count
    assert result["totalMessagesReceived"] == sent
    assert sum(t["sent"] for t in result["run"]["workerTotals"].values()) == sent
    assert sum(t["received"] for t in result["run"]["workerTotals"].values()) == sent
    faults = ("totalLost", "totalDuplicates", "totalPublishErrors")
    assert [result[field] for field in faults] == [0, 0, 0]
    assert result["slo"]["passed"] is True
    names = set(finished.results)
    assert any(n.endswith(".html") for n in names), names  # the HTML report
    assert any(n.endswith(".hlog") for n in names), names
    assert any(n.startswith("pipeline/") for n in names), names  # --pipeline, same volume


def test_a_missed_slo_fails_the_coordinator_with_exit_1(coordinate, workers):
    finished = coordinate(workers, slo=["publish.p50<1us"])
    assert finished.exit_code == 1, finished.log
    verdict = result_of(finished)["slo"]
    assert verdict["passed"] is False  # the result is written all the same
    assert "publish.p50" in finished.log


@pytest.mark.parametrize("how", ["no-address", "not-listening"])
def test_a_worker_never_ready_is_exit_3_at_workers_wait_naming_it(
    coordinate, workers, network, how
):
    """The last worker never answers: its pod has no address (not scheduled: its name is not in
    DNS), or its name leads where nothing listens (the coordinator's own address: refused)."""
    names = sorted(workers)
    hosts = {name: workers[name] for name in names[:-1]}
    if how == "not-listening":
        hosts[names[-1]] = network.pods[-1]
    finished = coordinate(hosts, workersWait=f"{UNREADY_WAIT_S}s")
    assert finished.exit_code == 3, finished.log
    assert f"http://{names[-1]}:8080" in finished.log
    # it gives up once less than two retry pauses (0.5 s) of the wait are left
    assert UNREADY_WAIT_S - 1 <= finished.seconds <= UNREADY_WAIT_S + START_SLACK_S, finished.log


def test_the_readiness_probe_asks_health_with_the_token_it_holds(podman, helm, values, workers):
    statefulset = one(parse(helm.template(values, release=RELEASE)), "StatefulSet")
    pod = worker_pods(statefulset)[0]
    probe = pod["spec"]["containers"][0]["readinessProbe"]["exec"]["command"]
    name = container_name(pod)
    deadline = time.monotonic() + WORKERS_WAIT_S
    while (done := podman.run("exec", name, *probe)).returncode != 0:
        assert time.monotonic() < deadline, done.stderr
        time.sleep(0.5)
    wrong = podman.run("exec", "-e", "LOADGEN_TOKEN=wrong", name, *probe)
    assert wrong.returncode != 0 and "401" in wrong.stderr
