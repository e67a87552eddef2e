"""Secured Kafka (SASL_SSL, SCRAM) and Pulsar (TLS + token) logins, through loadgen's own
commands, against the local endpoints ``loadgen brokers up KIND --secure`` starts: the driver
file it prints runs as written with exact counts, and a wrong password or token, a CA that
did not sign the certificate, and an expired certificate each end within 10 s with the exit
code of their kind (4: login refused, 7: TLS), naming the address and the user, never the
secret."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from loadgen.base.errors import MissingExtra
from loadgen.driver_api.local.certs import expired_server, make_certs, openssl_installed
from loadgen.driver_api.local.process import free_port
from loadgen.pytest_plugin.require import unavailable
from loadgen_drivers.kafka.local.secure import start_secure_kafka
from loadgen_drivers.pulsar.local.jwt_hs256 import make_token, new_secret
from loadgen_drivers.pulsar.local.secure import start_secure_pulsar

pytestmark = pytest.mark.integration

KINDS = ["kafka", "pulsar"]
REFUSED_WITHIN_S = 10.0
WORKLOAD = {
    "name": "secured",
    "topics": 1,
    "partitionsPerTopic": 2,
    "messageSize": 256,
    "subscriptionsPerTopic": 1,
    "consumerPerSubscription": 1,
    "producersPerTopic": 1,
    "producerRate": 500,
    "testDurationMinutes": 0.05,
    "warmupDurationMinutes": 0,
}
STARTERS = {"kafka": start_secure_kafka, "pulsar": start_secure_pulsar}


def loadgen(*args: str, cwd: Path, env: dict[str, str] | None = None):
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "loadgen", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    return done, time.monotonic() - started


def require_openssl() -> None:
    if not openssl_installed():
        unavailable("the openssl command is not installed")


@pytest.fixture(scope="module")
def endpoints(tmp_path_factory):
    """``loadgen brokers up KIND --secure`` on first use per kind: its address and the driver
    file it printed; ``brokers down`` at the end."""
    started: dict[str, tuple[str, str, Path]] = {}
    states: dict[str, tuple[Path, dict[str, str]]] = {}

    def endpoint(kind: str) -> tuple[str, str, Path]:
        if kind in started:
            return started[kind]
        require_openssl()
        state = tmp_path_factory.mktemp(f"{kind}-state")
        env = {**os.environ, "LOADGEN_STATE_DIR": str(state)}
        port = free_port()
        up, _ = loadgen("brokers", "up", kind, "--secure", "--port", str(port), cwd=state, env=env)
        states[kind] = (state, env)  # stopped at the end even when a check below fails
        if up.returncode != 0 and "not installed" in up.stderr:
            unavailable(up.stderr.strip().splitlines()[-1])
        assert up.returncode == 0, up.stderr
        assert f"{kind} --secure up at 127.0.0.1:{port}" in up.stdout
        [driver_file] = re.findall(r"^driver file: (.+)$", up.stdout, re.MULTILINE)
        started[kind] = (kind, f"127.0.0.1:{port}", Path(driver_file))
        return started[kind]

    yield endpoint
    for kind, (state, env) in states.items():
        down, _ = loadgen("brokers", "down", kind, "--secure", cwd=state, env=env)
        assert down.returncode == 0, down.stderr


@pytest.fixture(params=KINDS)
def secured(request, endpoints):
    return endpoints(request.param)


def secret_of(kind: str, driver: dict) -> str:
    if kind == "kafka":
        return re.search(r'password="([^"]+)"', common_text(driver)).group(1)
    return driver["client"]["authentication"]["data"].removeprefix("token:")


def common_text(driver: dict) -> str:
    common = driver["commonConfig"]
    return common if isinstance(common, str) else "\n".join(f"{k}={v}" for k, v in common.items())


def with_secret(kind: str, driver: dict, secret: str) -> dict:
    if kind == "kafka":
        text = re.sub(r'password="[^"]+"', f'password="{secret}"', common_text(driver))
        return driver | {"commonConfig": text}
    client = driver["client"]
    auth = client["authentication"] | {"data": f"token:{secret}"}
    return driver | {"client": client | {"authentication": auth}}


def with_trust(kind: str, driver: dict, ca: Path) -> dict:
    if kind == "kafka":
        text = re.sub(
            r"ssl\.truststore\.location=.*", f"ssl.truststore.location={ca}", common_text(driver)
        )
        return driver | {"commonConfig": text}
    return driver | {"client": driver["client"] | {"tlsTrustCertsFilePath": str(ca)}}


def run(tmp_path: Path, driver: dict | Path):
    if isinstance(driver, dict):
        (tmp_path / "driver.yaml").write_text(yaml.safe_dump(driver))
        driver = tmp_path / "driver.yaml"
    (tmp_path / "workload.yaml").write_text(yaml.safe_dump(WORKLOAD))
    return loadgen(
        "run", "-d", str(driver), "workload.yaml", "--plain", "--no-report", "-o", "out",
        cwd=tmp_path,
    )  # fmt: skip


def assert_refused(done, seconds, code, address, *, says, user=None, secret=None):
    assert done.returncode == code, done.stderr[-3000:]
    assert seconds < REFUSED_WITHIN_S, seconds
    assert address in done.stderr and says in done.stderr, done.stderr[-3000:]
    if user:
        assert f"user {user!r}" in done.stderr
    if secret:
        assert secret not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
    assert not list(done_results(done))


def done_results(done):
    return re.findall(r"^result: (.+\.json)$", done.stderr, re.MULTILINE)


def test_the_printed_driver_file_runs_as_written_with_exact_counts(secured, tmp_path):
    kind, _, driver_file = secured
    done, _ = run(tmp_path, driver_file)
    assert done.returncode == 0, done.stderr[-3000:]
    [result_file] = done_results(done)
    result = json.loads(Path(tmp_path / result_file).read_text())
    assert result["totalMessagesSent"] > 0
    assert result["totalMessagesReceived"] == result["totalMessagesSent"]
    assert result["totalLost"] == 0 and result["totalDuplicates"] == 0
    secret = secret_of(kind, yaml.safe_load(driver_file.read_text()))
    assert secret not in done.stderr + done.stdout + Path(tmp_path / result_file).read_text()


def test_no_file_others_can_read_holds_the_password_token_or_a_private_key(secured):
    """``brokers up KIND --secure``'s state and endpoint folder: the secrets are in files only
    their owner reads (the driver file, users, token secret, keys), nowhere else."""
    kind, _, driver_file = secured
    secret = secret_of(kind, yaml.safe_load(driver_file.read_text())).encode()
    state = driver_file.parents[1]
    files = [path for path in state.rglob("*") if path.is_file()]
    assert driver_file in files and state / f"{kind}-secure.json" in files
    readable = [path for path in files if path.stat().st_mode & 0o044]
    assert readable, files  # the certificates and logs
    held = {path: path.read_bytes() for path in readable}
    assert not [path for path, data in held.items() if secret in data or b"PRIVATE KEY" in data]


def pkcs12_truststore(common: str, folder: Path) -> str:
    """The file's PEM truststore as a PKCS12 one, as a Java user's ``keytool`` would make."""
    ca = re.search(r"ssl\.truststore\.location=(.+)", common).group(1)
    store = folder / "truststore.p12"
    subprocess.run(
        ["openssl", "pkcs12", "-export", "-nokeys", "-in", ca, "-out", str(store),
         "-passout", "pass:store-secret"],
        check=True, capture_output=True,
    )  # fmt: skip
    common = re.sub(r"ssl\.truststore\.location=.+", f"ssl.truststore.location={store}", common)
    common = common.replace("ssl.truststore.type=PEM", "ssl.truststore.type=PKCS12")
    return common + "ssl.truststore.password=store-secret\n"


def librdkafka_keys(common: str, _: Path) -> str:
    """The same login in librdkafka's own keys, as a confluent-kafka user writes them."""
    user, password = re.search(r'username="([^"]+)" password="([^"]+)"', common).groups()
    ca = re.search(r"ssl\.truststore\.location=(.+)", common).group(1)
    address = re.search(r"bootstrap\.servers=(.+)", common).group(1)
    return (
        f"bootstrap.servers={address}\nsecurity.protocol=SASL_SSL\n"
        f"sasl.mechanisms=SCRAM-SHA-512\nsasl.username={user}\nsasl.password={password}\n"
        f"ssl.ca.location={ca}\n"
    )


@pytest.mark.parametrize("rewrite", [pkcs12_truststore, librdkafka_keys])
def test_the_kafka_login_written_other_ways_runs_the_same(endpoints, rewrite, tmp_path):
    _, _, driver_file = endpoints("kafka")
    driver = yaml.safe_load(driver_file.read_text())
    driver["commonConfig"] = rewrite(driver["commonConfig"], tmp_path)
    done, _ = run(tmp_path, driver)
    assert done.returncode == 0, done.stderr[-3000:]
    [result_file] = done_results(done)
    result = json.loads(Path(tmp_path / result_file).read_text())
    assert result["totalMessagesSent"] > 0 and result["totalLost"] == 0
    assert result["totalMessagesReceived"] == result["totalMessagesSent"]


def as_documented(text: str) -> dict:
    """A driver file with what differs per start (port, folder, secret) as the docs write it."""
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)
    text = re.sub(r'password="[^"]+"', 'password="<generated>"', text)
    text = re.sub(r"token:\S+", "token:<generated>", text)
    text = re.sub(r"(location=|FilePath: )\S+/", r"\1FOLDER/", text)
    return yaml.safe_load(text)


def test_the_docs_show_the_printed_driver_file(secured):
    kind, _, driver_file = secured
    docs = (Path(__file__).parents[2] / "docs" / "security.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", docs, re.DOTALL)
    [shown] = [block for block in blocks if f"name: {kind}-secure-local" in block]
    assert as_documented(shown) == as_documented(driver_file.read_text())


def test_a_stopped_endpoint_is_exit_3_not_a_login_or_tls_failure(secured, tmp_path):
    _, address, driver_file = secured
    closed = f"127.0.0.1:{free_port()}"
    done, seconds = run(tmp_path, yaml.safe_load(driver_file.read_text().replace(address, closed)))
    assert_refused(done, seconds, 3, closed, says="unreachable")


def test_a_probe_logs_in_with_the_printed_driver_file(secured, tmp_path):
    kind, address, driver_file = secured
    url = f"kafka+ssl://{address}" if kind == "kafka" else f"pulsar+ssl://{address}"
    done, _ = loadgen("probe", url, "-d", str(driver_file), "--duration", "2s", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_wrong_password_or_token_is_exit_4_naming_the_user(secured, tmp_path):
    kind, address, driver_file = secured
    driver = yaml.safe_load(driver_file.read_text())
    # Kafka: another password; Pulsar: a token for the same user signed with another key
    wrong = "wr0ng-password" if kind == "kafka" else make_token("loadgen", new_secret())
    done, seconds = run(tmp_path, with_secret(kind, driver, wrong))
    assert_refused(
        done, seconds, 4, address, says="refused the login", user="loadgen", secret=wrong
    )


def test_a_ca_that_did_not_sign_the_certificate_is_exit_7(secured, tmp_path):
    kind, address, driver_file = secured
    other = make_certs(tmp_path / "other", ca_name="another-ca")
    driver = yaml.safe_load(driver_file.read_text())
    done, seconds = run(tmp_path, with_trust(kind, driver, other.ca))
    assert_refused(
        done, seconds, 7, address, says="TLS handshake failed",
        secret=secret_of(kind, driver),
    )  # fmt: skip
    assert "certificate verify failed" in done.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_an_expired_server_certificate_is_exit_7(kind, tmp_path):
    require_openssl()
    folder = tmp_path / "endpoint"
    certs = make_certs(folder)
    try:
        broker = STARTERS[kind](log_dir=folder, server=expired_server(certs))
    except MissingExtra as missing:
        unavailable(str(missing))
    try:
        done, seconds = run(tmp_path, Path(broker.driver_file))
    finally:
        broker.stop()
    assert_refused(done, seconds, 7, broker.address, says="TLS handshake failed")
    assert "expired" in done.stderr
