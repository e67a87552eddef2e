"""``loadgen brokers up redis --secure``: redis-server with TLS only and an ACL user. The
driver file it prints runs as written with exact counts and is its owner's only; a wrong
password is exit 4 naming the user, a CA that did not sign the certificate exit 7, each
within seconds and never showing the password."""

import os
import re
import stat
from pathlib import Path

import pytest
import yaml
from tests.integration.test_redis_cli import timed_loadgen
from tests.upstream.test_kafka_upstream_cli import printed_driver_file, run_exact

from loadgen.driver_api.local.certs import make_certs, openssl_installed
from loadgen.driver_api.local.process import free_port
from loadgen.pytest_plugin.require import unavailable

pytestmark = pytest.mark.integration

WORKLOAD = dict(
    name="secured", topics=1, partitionsPerTopic=2, messageSize=256, producersPerTopic=1,
    producerRate=500, subscriptionsPerTopic=1, consumerPerSubscription=1, testDurationMinutes=1,
)  # fmt: skip


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """``brokers up redis --secure``: the environment and the driver file it printed."""
    if not openssl_installed():
        unavailable("the openssl command is not installed")
    state = tmp_path_factory.mktemp("state")
    env = {**os.environ, "LOADGEN_STATE_DIR": str(state)}
    up, _ = timed_loadgen("brokers", "up", "redis", "--secure", "--port", free_port(), env=env)
    try:
        assert up.returncode == 0, up.stderr
        assert "redis --secure up at 127.0.0.1:" in up.stdout
        yield env, printed_driver_file(up)
    finally:
        down, _ = timed_loadgen("brokers", "down", "redis", "--secure", env=env)
        assert down.returncode == 0 and "redis --secure stopped" in down.stdout


def password_of(driver_file: Path) -> str:
    return yaml.safe_load(driver_file.read_text())["redisPass"]


def test_the_printed_driver_file_runs_exactly_and_is_its_owners_only(secured, tmp_path):
    env, driver_file = secured
    workload = tmp_path / "workload.yaml"
    workload.write_text(yaml.safe_dump(WORKLOAD))
    run_exact(driver_file, workload, tmp_path / "out", env, warmup="0s", duration="3s")
    password = password_of(driver_file)
    state = driver_file.parents[1]
    readable = [
        path for path in state.rglob("*")
        if path.is_file() and stat.S_IMODE(path.stat().st_mode) & 0o077
        and password in path.read_text(errors="replace")
    ]  # fmt: skip
    assert readable == []
    assert stat.S_IMODE(driver_file.stat().st_mode) == 0o600
    [result] = (tmp_path / "out").glob("*.json")
    assert password not in result.read_text()


def refused(secured, tmp_path, **changes):
    env, driver_file = secured
    driver = yaml.safe_load(driver_file.read_text())
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump(driver | changes))
    address = f"127.0.0.1:{driver['redisPort']}"
    done, seconds = timed_loadgen("probe", f"rediss://{address}", "-d", changed, env=env)
    assert seconds < 10 and "Traceback" not in done.stderr
    assert password_of(driver_file) not in done.stderr + done.stdout
    return done, address


def test_a_wrong_password_is_exit_4_naming_the_user(secured, tmp_path):
    done, address = refused(secured, tmp_path, redisPass="not-the-password")
    assert done.returncode == 4, done.stderr
    assert f"redis broker at {address} refused the login of user 'loadgen'" in done.stderr


def test_a_ca_that_did_not_sign_the_certificate_is_exit_7(secured, tmp_path):
    other = make_certs(tmp_path / "other")
    done, address = refused(secured, tmp_path, tls={"caFile": str(other.ca)})
    assert done.returncode == 7, done.stderr
    assert re.search(
        rf"redis broker at {address}: TLS handshake failed: certificate verify", done.stderr
    )
