"""Security: the worker API and the metrics endpoint refuse what they must and survive what
they are sent; no secret from a driver file reaches the console, a result, an HdrHistogram log
or an HTML report.
"""

import json
import secrets
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from loadgen.distributed.server import _Routes, make_app
from loadgen.distributed.service import WorkerService
from loadgen.distributed.spawn import announced_url, start_worker_process, stop_worker_processes
from loadgen.metrics.board import MetricsBoard
from loadgen.metrics.endpoint import serving
from loadgen_drivers.rabbitmq.local.server import rabbitmqctl

TOKEN = secrets.token_urlsafe(16)
WORKLOAD = {
    "name": "secrets",
    "topics": 1,
    "partitionsPerTopic": 2,
    "messageSize": 100,
    "subscriptionsPerTopic": 1,
    "consumerPerSubscription": 1,
    "producersPerTopic": 1,
    "producerRate": 200,
    "testDurationMinutes": 1,
    "warmupDurationMinutes": 0,
}


def worker_routes() -> list[tuple[str, str]]:
    """Every (method, path) the worker serves, read from the app itself so new routes count."""
    with ThreadPoolExecutor(1) as executor:
        app = make_app(_Routes(WorkerService(), executor), TOKEN, 1024)
        return sorted(
            {(route.method, route.resource.canonical) for route in app.router.routes()}
            - {("HEAD", resource) for resource in ("/health", "/clock", "/counters")}
        )


def request(url, method="GET", data=None, authorization=f"Bearer {TOKEN}"):
    """(status, body) of one HTTP request; no exception for 4xx/5xx answers."""
    call = urllib.request.Request(url, data=data, method=method)
    if authorization is not None:
        call.add_header("Authorization", authorization)
    try:
        with urllib.request.urlopen(call, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@pytest.fixture(scope="module")
def worker_url():
    process = start_worker_process(TOKEN)
    try:
        yield announced_url(process, time.monotonic() + 30, "test worker")
    finally:
        stop_worker_processes([process])


WRONG = {
    "no header": None,
    "no scheme": TOKEN,
    "wrong token": "Bearer not-the-token",
    "token prefix": f"Bearer {TOKEN[:-1]}",
    "token and more": f"Bearer {TOKEN}x",
    "basic scheme": f"Basic {TOKEN}",
}


@pytest.mark.e2e
@pytest.mark.parametrize("route", worker_routes(), ids=" ".join)
def test_every_worker_route_refuses_a_missing_or_wrong_token(worker_url, route):
    method, path = route
    for name, authorization in WRONG.items():
        data = b"{}" if method == "POST" else None
        status, body = request(worker_url + path, method, data, authorization)
        assert status == 401, f"{name}: {status} {body[:200]!r}"
        assert json.loads(body)["exitCode"] == 2
    # nothing the refused requests asked for happened: no driver opened, the worker still serves
    status, body = request(f"{worker_url}/health")
    assert status == 200 and json.loads(body)["busy"] is False


MALFORMED = {
    "not json": b"{not json",
    "not utf-8": b"\xff\xfe\x00",
    "a list": b"[1, 2]",
    "nested 100k deep": b"[" * 100_000 + b"]" * 100_000,
    "infinity": b'{"count": 1e999}',
    "wrong types": b'{"count": "many", "partitions": {}}',
}


@pytest.mark.e2e
@pytest.mark.parametrize("body", MALFORMED.values(), ids=list(MALFORMED))
def test_malformed_bodies_get_a_400_naming_the_problem_and_the_worker_goes_on(worker_url, body):
    bodied = [path for method, path in worker_routes() if method == "POST"]
    for path in bodied:
        status, answer = request(worker_url + path, "POST", body)
        if status == 422:  # the route takes no body and refused for lack of a driver instead
            assert "POST /driver first" in json.loads(answer)["message"], path
            continue
        assert status == 400, f"{path}: {status} {answer[:200]!r}"
        refusal = json.loads(answer)
        assert refusal["error"] == "BadRequest" and refusal["exitCode"] == 2 and refusal["message"]
    assert request(f"{worker_url}/health")[0] == 200


@pytest.mark.e2e
def test_the_metrics_endpoint_needs_the_token_when_it_has_one():
    board = MetricsBoard(role="coordinator", worker="all")
    with serving(board, "127.0.0.1", 0, TOKEN) as url:
        for name, authorization in WRONG.items():
            status, body = request(url, authorization=authorization)
            assert status == 401, f"{name}: {status} {body[:200]!r}"
        status, body = request(url)
        assert status == 200 and b"loadgen_" in body


SECRET = "s3cret-" + secrets.token_hex(8)


def kafka_driver(broker):
    config = dict(broker.driver_config)
    # librdkafka keeps SASL/SSL passwords even on a PLAINTEXT connection, so the run works;
    # the JAAS text (OMB's way) becomes sasl.username/sasl.password on the way
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="loadgen" password="{SECRET}";'
    )
    config["commonConfig"] += (
        f"\nssl.key.password={SECRET}\nsasl.mechanism=PLAIN\nsasl.jaas.config={jaas}"
    )
    return {"name": "Kafka", "driver": "kafka", **config}


def pulsar_driver(broker):
    config = json.loads(json.dumps(broker.driver_config))
    config["client"]["authentication"] = {
        "plugin": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
        "data": f"token:{SECRET}",
    }
    return {"name": "Pulsar", "driver": "pulsar", **config}


def rabbitmq_driver(broker):
    user = "loadgen-" + secrets.token_hex(4)
    rabbitmqctl(broker, "add_user", user, SECRET)
    rabbitmqctl(broker, "set_permissions", "-p", "/", user, ".*", ".*", ".*")
    uri = f"amqp://{user}:{SECRET}@{broker.address}/%2F"
    return {"name": "RabbitMQ", "driver": "rabbitmq", **broker.driver_config, "amqpUris": [uri]}


@pytest.mark.integration
@pytest.mark.parametrize(
    "kind, make_driver, flags",
    [
        ("kafka", kafka_driver, ["--processes", "2"]),
        ("pulsar", pulsar_driver, []),
        ("rabbitmq", rabbitmq_driver, []),
    ],
    ids=["kafka-sasl-and-ssl-passwords", "pulsar-token", "rabbitmq-uri-password"],
)
def test_no_secret_reaches_the_console_or_any_file(kind, make_driver, flags, tmp_path, request):
    broker = request.getfixturevalue(f"{kind}_broker")
    (tmp_path / "driver.yaml").write_text(yaml.safe_dump(make_driver(broker)))
    (tmp_path / "workload.yaml").write_text(yaml.safe_dump(WORKLOAD))
    out = tmp_path / "out"
    run = subprocess.run(
        [sys.executable, "-m", "loadgen", "-vv", "run", "-d", "driver.yaml", "workload.yaml",
         "--duration", "3s", "--plain", "-o", str(out), *flags],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    [result] = out.glob("*.json")
    assert json.loads(result.read_text())["totalMessagesReceived"] > 0  # the secret was in use
    report = subprocess.run(
        [sys.executable, "-m", "loadgen", "report", str(result), "-o", str(tmp_path / "r.html")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr[-3000:]
    written = [path for path in tmp_path.rglob("*") if path.is_file() and path.suffix != ".yaml"]
    assert {".json", ".hlog", ".html"} <= {path.suffix for path in written}
    for text, where in [
        (run.stdout, "run stdout"),
        (run.stderr, "run stderr"),
        (report.stdout + report.stderr, "report output"),
        *((path.read_bytes().decode(errors="replace"), str(path)) for path in written),
    ]:
        assert SECRET not in text, f"the secret is in {where}"
    assert "<redacted>" in result.read_text()


def test_worker_routes_cover_the_whole_api():
    """The route list the tests above walk is the real one (and not empty by mistake)."""
    paths = {path for _, path in worker_routes()}
    assert {"/health", "/driver", "/load/start", "/close", "/counters"} <= paths
