"""RabbitMQ Streams as a user meets it on the command line: ``probe rabbitmq-stream://…``,
``run rabbitmq-stream://… --rate``, a refused port (exit 3 in under a second), a wrong password
(exit 4, on the plain broker's ``guest`` and the secured one's user), and the secured local
broker: TLS with its printed driver file, and a CA that did not sign its certificate (exit 7)."""

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
from loadgen_drivers.rabbitmq_streams import Driver
from loadgen_drivers.rabbitmq_streams.local.secure import start_secure_rabbitmq_streams

pytestmark = pytest.mark.integration


def url(broker, user="guest", password="guest", scheme="rabbitmq-stream"):
    return f"{scheme}://{user}:{password}@{broker.address}/%2F"


def test_a_probe_of_a_stream_url_loses_nothing(rabbitmq_streams_broker):
    done = loadgen("probe", url(rabbitmq_streams_broker), "--rate", "200", "--duration", "2s")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "RabbitMQ Streams" in done.stdout + done.stderr
    [(sent, received)] = re.findall(
        r"^probe: sent (\d+), received (\d+), errors 0$", done.stdout, re.M
    )
    assert int(sent) == int(received) > 300


def test_a_run_from_flags_receives_every_message(rabbitmq_streams_broker, tmp_path):
    done = loadgen(
        "run", url(rabbitmq_streams_broker), "--rate", "1k", "--size", "1KiB",
        "--partitions", "3", "--duration", "2s", "--warmup", "0s", "--stats-interval", "1s",
        "--quiet", "--no-report", "-o", tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    [path] = tmp_path.glob("*.json")
    result = json.loads(path.read_text())
    assert result["driver"] == "RabbitMQ Streams"
    assert result["totalMessagesSent"] == result["totalMessagesReceived"] >= 1_900
    assert (result["totalLost"], result["totalDuplicates"], result["totalPublishErrors"]) == (
        0, 0, 0,
    )  # fmt: skip


def test_a_refused_port_is_reported_in_under_a_second_naming_the_address():
    address = f"127.0.0.1:{free_port()}"
    config = {"uris": [f"rabbitmq-stream://guest:guest@{address}/%2F"]}
    driver = Driver.from_config(DriverSpec("Streams", "rabbitmq-streams", config, None))
    started = time.monotonic()
    with pytest.raises(BrokerUnreachable) as raised:
        driver.check_reachable(10.0)
    assert time.monotonic() - started < 1.0
    assert address in str(raised.value) and "refused" in str(raised.value)
    driver.close()
    done = loadgen("probe", f"rabbitmq-stream://{address}", "--duration", "2s")
    assert done.returncode == 3 and address in done.stderr


def test_a_wrong_password_is_exit_4_naming_the_user(rabbitmq_streams_broker):
    started = time.monotonic()
    done = loadgen("probe", url(rabbitmq_streams_broker, password="not-the-password"))
    assert done.returncode == 4, done.stderr[-2000:]
    assert "guest" in done.stderr and "not-the-password" not in done.stderr
    assert time.monotonic() - started < 15  # the refusal, not a retry loop


@pytest.fixture(scope="module")
def secured():
    broker = start_secure_rabbitmq_streams()
    yield broker
    broker.stop()


def probe_with(driver_file, broker, uri=None):
    uri = uri or broker.driver_config["uris"][0]
    return loadgen("probe", "-d", driver_file, uri, "--duration", "2s")


def rewritten(secured, tmp_path, **changes):
    document = yaml.safe_load(Path(secured.driver_file).read_text()) | changes
    path = tmp_path / "changed.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def test_the_secured_broker_s_driver_file_is_private_and_runs_over_tls(secured):
    assert stat.S_IMODE(os.stat(secured.driver_file).st_mode) == 0o600
    assert secured.driver_config["uris"][0].startswith("rabbitmq-stream+tls://loadgen:")
    done = probe_with(secured.driver_file, secured)
    assert done.returncode == 0, done.stderr[-2000:]
    password = secured.driver_config["uris"][0].split(":")[2].split("@")[0]
    assert password not in done.stdout + done.stderr


def test_a_wrong_password_on_the_secured_broker_is_exit_4(secured, tmp_path):
    uri = secured.driver_config["uris"][0]
    wrong = re.sub(r"loadgen:[^@]+@", "loadgen:not-the-password@", uri)
    done = probe_with(secured.driver_file, secured, wrong)
    assert done.returncode == 4, done.stderr[-2000:]
    assert "not-the-password" not in done.stderr


def test_a_ca_that_did_not_sign_the_certificate_is_exit_7(secured, tmp_path):
    done = probe_with(rewritten(secured, tmp_path, tls={}), secured)  # the system's CAs
    assert done.returncode == 7, done.stderr[-2000:]
    assert "certificate verify failed" in done.stderr
