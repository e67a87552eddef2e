"""Redis Streams as a user types it: ``loadgen probe redis://…``, ``loadgen run redis://…``
from flags, and the refusals: a closed port (exit 3 within a second), a wrong or missing
password (exit 4 naming the user, never the password)."""

import json
import secrets
import sys
import time

import pytest
from tests.integration.test_adhoc_brokers import assert_yaml_run_equals_adhoc_run
from tests.upstream.test_kafka_upstream_cli import loadgen

from harness.timing import run_watched
from loadgen.driver_api.local.process import free_port
from loadgen_drivers.redis.local.server import start_redis

pytestmark = pytest.mark.integration


def timed_loadgen(*args, env=None, timeout=60):
    """``loadgen ARGS`` as a user types it, and how long it took."""
    started = time.monotonic()
    done = loadgen(*args, env=env, timeout=timeout)
    return done, time.monotonic() - started


@pytest.fixture(scope="module")
def locked():
    """A redis-server that asks for a password (``requirepass``): its address and password."""
    password = secrets.token_urlsafe(12)
    broker = start_redis(password=password)
    yield broker.address, password
    broker.stop()


def test_a_probe_reads_back_everything_it_sent(redis_broker):
    done, _ = timed_loadgen(
        "probe", f"redis://{redis_broker.address}", "--duration", "2s", "--json"
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["sent"] == summary["received"] > 0 and summary["errors"] == 0
    assert 0 < summary["e2e_ms"]["p50"] <= summary["e2e_ms"]["max"]


def test_a_url_run_from_flags_equals_the_yaml_run_it_prints(redis_broker, tmp_path):
    settings = {"name": "Redis Streams", "driver": "redis", **redis_broker.driver_config}
    assert_yaml_run_equals_adhoc_run(f"redis://{redis_broker.address}", settings, tmp_path)


def test_a_closed_port_exits_3_within_a_second_naming_the_address():
    address = f"127.0.0.1:{free_port()}"
    done = run_watched([sys.executable, "-m", "loadgen", "probe", f"redis://{address}"])
    assert done.returncode == 3, done.stderr
    assert f"redis broker unreachable at {address}: connection refused" in done.stderr
    assert done.said("error: ") - done.said("probing ") < 1
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("given", ["wrong", None])
def test_a_wrong_or_missing_password_exits_4_naming_the_user(locked, given):
    address, password = locked
    userinfo = f":{given}-{password}@" if given else ""
    done, seconds = timed_loadgen("probe", f"redis://{userinfo}{address}", "--duration", "2s")
    assert done.returncode == 4, done.stderr
    assert f"redis broker at {address} refused the login of user 'default'" in done.stderr
    assert password not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr and seconds < 10


def test_the_right_password_runs(locked):
    address, password = locked
    done, _ = timed_loadgen("probe", f"redis://:{password}@{address}", "--duration", "1s", "--json")
    assert done.returncode == 0, done.stderr
    assert password not in done.stderr + done.stdout
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["sent"] == summary["received"] > 0
