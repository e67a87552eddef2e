"""NATS as a user meets it on the command line: ``probe nats://…``, ``run nats://… --rate``,
a refused port (exit 3 in under a second), a wrong password (exit 4), a CA that did not sign
the server's certificate (exit 7), and the secured local broker's printed driver file."""

import json
import os
import re
import stat
import time
from pathlib import Path

import pytest
import yaml
from tests.upstream.test_kafka_upstream_cli import loadgen

from loadgen.base.errors import BrokerUnreachable
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.local.process import free_port
from loadgen_drivers.nats import Driver
from loadgen_drivers.nats.local.server import start_secure_nats

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def secured():
    broker = start_secure_nats()
    yield broker
    broker.stop()


def test_a_probe_of_a_nats_url_loses_nothing(nats_broker):
    done = loadgen("probe", f"nats://{nats_broker.address}", "--rate", "200", "--duration", "2s")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "NATS JetStream" in done.stdout + done.stderr
    assert "errors 0" in done.stdout
    [(sent, received)] = re.findall(
        r"^probe: sent (\d+), received (\d+), errors 0$", done.stdout, re.M
    )
    assert int(sent) == int(received) > 300


def test_a_run_from_flags_receives_every_message(nats_broker, tmp_path):
    done = loadgen(
        "run", f"nats://{nats_broker.address}", "--rate", "1k", "--size", "1KiB",
        "--partitions", "3", "--duration", "2s", "--warmup", "0s", "--stats-interval", "1s",
        "--quiet", "--no-report", "-o", tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    [path] = tmp_path.glob("*.json")
    result = json.loads(path.read_text())
    assert result["totalMessagesSent"] == result["totalMessagesReceived"] >= 1_900
    assert (result["totalLost"], result["totalDuplicates"], result["totalPublishErrors"]) == (
        0, 0, 0,
    )  # fmt: skip


def test_a_refused_port_is_reported_in_under_a_second_naming_the_address():
    address = f"127.0.0.1:{free_port()}"
    driver = Driver.from_config(DriverSpec("NATS", "nats", {"natsHostUrl": address}, None))
    started = time.monotonic()
    with pytest.raises(BrokerUnreachable) as raised:
        driver.check_reachable(10.0)
    assert time.monotonic() - started < 1.0
    assert address in str(raised.value) and "refused" in str(raised.value)
    done = loadgen("probe", f"nats://{address}", "--duration", "2s")
    assert done.returncode == 3 and address in done.stderr


def test_the_printed_driver_file_is_private_and_runs(secured, tmp_path):
    driver_file = secured.driver_file
    assert stat.S_IMODE(os.stat(driver_file).st_mode) == 0o600
    done = loadgen("probe", "-d", driver_file, f"nats://{secured.address}", "--duration", "2s")
    assert done.returncode == 0, done.stderr[-2000:]
    assert secured.driver_config["password"] not in done.stdout + done.stderr


def rewritten(secured, tmp_path, **changes):
    document = yaml.safe_load(Path(secured.driver_file).read_text()) | changes
    path = tmp_path / "changed.yaml"
    path.write_text(yaml.safe_dump({k: v for k, v in document.items() if v is not None}))
    return path


def test_a_wrong_password_is_exit_4_naming_the_user(secured, tmp_path):
    driver_file = rewritten(secured, tmp_path, password="not-the-password")
    done = loadgen("probe", "-d", driver_file, f"nats://{secured.address}", "--duration", "2s")
    assert done.returncode == 4, done.stderr[-2000:]
    assert "loadgen" in done.stderr and "not-the-password" not in done.stderr


def test_a_ca_that_did_not_sign_the_certificate_is_exit_7(secured, tmp_path):
    driver_file = rewritten(secured, tmp_path, tls={})  # the system's CAs
    done = loadgen("probe", "-d", driver_file, f"nats://{secured.address}", "--duration", "2s")
    assert done.returncode == 7, done.stderr[-2000:]
    assert "certificate verify failed" in done.stderr
