"""A broker restarted in the middle of a run: the run goes on, says when and how long the broker
was gone, and its accounting says what the broker lost.

Each test owns its broker (restarting the suite's shared one would disturb other tests), of
the kind and variant the plugin's fixtures start (Kafka: tansu, or Apache Kafka with
``--loadgen-upstream``; a kind left out by ``--loadgen-broker`` is skipped), and runs
``loadgen run`` as a user would, restarting the broker once the measurement is 4 s in.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import yaml

from loadgen.local_brokers import launcher
from loadgen.pytest_plugin.fixtures import start_local_broker
from loadgen_drivers.kafka.local.tansu import SESSION_OUTLASTING_AN_OUTAGE
from loadgen_drivers.rabbitmq.local.server import rabbitmqctl

pytestmark = [pytest.mark.integration, pytest.mark.long]

RATE = 500
DOWN_S = 3.0
WORKLOAD = {
    "name": "restart",
    "topics": 1,
    "partitionsPerTopic": 2,
    "messageSize": 256,
    "subscriptionsPerTopic": 1,
    "consumerPerSubscription": 1,
    "producersPerTopic": 1,
    "producerRate": RATE,
    "testDurationMinutes": 1,
    "warmupDurationMinutes": 0,
}


def run_through_restart(tmp_path, driver, restart, duration_s=16.0):
    """``loadgen run`` for ``duration_s``; ``restart()`` is called 4 s into the measurement and
    returns, once the broker is back, the epoch window in which it stopped serving (earliest,
    latest). Returns the result, the console output, that window and when it was back."""
    (tmp_path / "driver.yaml").write_text(yaml.safe_dump(driver))
    (tmp_path / "workload.yaml").write_text(yaml.safe_dump(WORKLOAD))
    command = [sys.executable, "-m", "loadgen", "run", "-d", str(tmp_path / "driver.yaml")]
    command += [str(tmp_path / "workload.yaml"), "-o", str(tmp_path / "out")]
    command += ["--duration", f"{duration_s:.0f}s", "--stats-interval", "1s", "--plain"]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(child.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 60
        while sum("[measure]" in line for line in list(lines)) < 4:
            assert child.poll() is None and time.monotonic() < deadline, "".join(lines)
            time.sleep(0.05)
        down = restart()
        up_at = time.time()
        child.wait(duration_s + 90)
    finally:
        child.kill()  # a no-op once it exited; never left running by a failed step
        child.wait(10)
    reader.join(5)
    output = "".join(lines)
    assert child.returncode == 0, output
    [path] = (tmp_path / "out").glob("*.json")
    return json.loads(path.read_text()), output, down, up_at


def check_outage_reported(result, output, down, up_at, *, queued=True):
    """One publish outage, recovered, covering the broker's absence; both in the console too.
    ``queued``: the client held the messages sent meanwhile (Kafka, Pulsar), so the stall is in
    their latency from the intended send time; RabbitMQ's fail at once instead (counted)."""
    assert not result.get("incomplete"), result.get("stopReason")
    publish = [outage for outage in result["outages"] if outage["role"] == "publish"]
    assert len(publish) == 1, result["outages"]
    [outage] = publish
    assert outage["recovered"] is True
    earliest, latest = down  # the broker stopped serving in this window
    assert earliest - 1.0 < outage["startMs"] / 1000 < latest + 1.0
    # gone for DOWN_S at least (the test's own sleep, between the stop and the start)
    assert DOWN_S - 0.5 <= outage["seconds"] <= up_at - earliest + 8
    if queued:
        stall_ms = (DOWN_S - 0.5) * 1000
        assert result["aggregatedPublishFromIntendedLatencyMax"] >= stall_ms
    assert "no acknowledgements for" in output and "acknowledgements resumed after a" in output
    assert "outage(s) during the run" in output
    # it went on after the restart: full seconds near the end publish and consume at the rate
    # asked (the last interval may be a short one, cut at the end of the run)
    assert all(rate > RATE * 0.8 for rate in result["publishRate"][-4:-1]), result["publishRate"]
    assert all(rate > RATE * 0.8 for rate in result["consumeRate"][-4:-1]), result["consumeRate"]


def restarted_run(tmp_path, name, broker, restarted, restart, duration_s=16.0):
    """The run through ``restart``, its outage checked; every broker started is stopped after."""
    driver = {"name": name, "driver": name.lower(), **broker.driver_config}
    try:
        result, output, down, up_at = run_through_restart(tmp_path, driver, restart, duration_s)
    finally:
        for started in [broker, *restarted]:
            started.stop()
    check_outage_reported(result, output, down, up_at)
    return result, output


CRASHED_SESSION_S = 9.0
"""Apache Kafka's ``broker.session.timeout.ms``: a node started again after a crash is refused
(DUPLICATE_BROKER_REGISTRATION) until the session of the one that crashed has expired."""


def test_kafka_restart_loses_what_the_broker_did_not_keep_and_the_accounting_says_how_much(
    tmp_path, request
):
    folder = tmp_path / "broker"
    starting = time.monotonic()
    broker = start_local_broker(request.config, "kafka", folder=folder)
    start_s = time.monotonic() - starting  # a control: this host's start of this broker
    upstream = bool(broker.server)  # Apache Kafka (--loadgen-upstream), else tansu
    port = int(broker.address.rsplit(":", 1)[1])
    duration_s = 16.0
    if upstream:  # the run must outlast the restart: the old session, then a start
        duration_s += CRASHED_SESSION_S + 3 * start_s
    else:
        broker.driver_config["consumerConfig"] += SESSION_OUTLASTING_AN_OUTAGE
    restarted = []

    def restart():  # a crash: the broker is killed, then started on the same port and folder
        os.kill(broker.pid, signal.SIGKILL)
        down_at = time.time()
        time.sleep(DOWN_S)
        kept = {"keep_data": True} if upstream else {}  # Apache Kafka's log dir, as it was
        restarted.append(launcher.start("kafka", port, folder, upstream=upstream, **kept))
        return down_at, down_at

    result, output = restarted_run(tmp_path, "Kafka", broker, restarted, restart, duration_s)
    sent, received = result["totalMessagesSent"], result["totalMessagesReceived"]
    lost, duplicates = result["totalLost"], result["totalDuplicates"]
    unread = result["totalUnread"] or 0  # still on the broker when the drain ended: not lost
    if upstream:  # Apache Kafka: what it acknowledged (acks=all) is in its log, kept: none lost
        assert lost == 0, result["deliveryAccounting"]
    else:
        # tansu keeps messages in memory only: what it had acknowledged but not yet delivered
        # when it was killed is gone (a few milliseconds' worth at this rate: often none,
        # never more than a second's)
        assert 0 <= lost <= RATE
    # the accounting must add up to what was received
    assert received == sent - lost - unread + duplicates
    # the console's delivery warning names what was lost or came twice, if any
    assert (f"{lost:,} lost" in output) == (lost > 0), output[-2000:]
    assert (f"{duplicates:,} duplicated" in output) == (duplicates > 0), output[-2000:]
    # the consumer found the topic again (recreated by tansu, kept by Apache Kafka)
    assert all(outage["recovered"] for outage in result["outages"]), result["outages"]


def test_pulsar_restart_loses_nothing_it_acknowledged(tmp_path, request):
    """pulsar-lite, or with ``--loadgen-upstream`` Apache Pulsar's standalone, whose driver
    creates the topic's two partitions through the admin REST."""
    data = tmp_path / "broker"  # kept by the restart, removed with the test's folder
    upstream = bool(request.config.getoption("--loadgen-upstream"))
    partitions = {} if upstream else {"default_partitions": 2}
    starting = time.monotonic()
    broker = start_local_broker(request.config, "pulsar", folder=data, **partitions)
    start_s = time.monotonic() - starting  # a control: this host's start of this broker
    port = int(broker.address.rsplit(":", 1)[1])
    restarted = []

    def restart():  # a clean stop (SIGTERM), then the same data directory again
        stopping = time.time()
        broker.stop()
        down_at = time.time()
        time.sleep(DOWN_S)
        again = launcher.start(
            "pulsar", port, data, upstream=upstream, keep_data=True, **partitions
        )
        restarted.append(again)
        return stopping, down_at

    duration_s = 16.0 + 3 * start_s  # the run must outlast the restart
    result, _ = restarted_run(tmp_path, "Pulsar", broker, restarted, restart, duration_s)
    # What was acknowledged is kept (RocksDB; Apache Pulsar's bookies); acknowledgements of
    # deliveries in flight at the stop may be lost, so some messages come twice (at-least-once),
    # and the accounting counts them
    assert result["totalLost"] == 0
    assert (
        result["totalMessagesReceived"] == result["totalMessagesSent"] + result["totalDuplicates"]
    )


def test_rabbitmq_restart_with_quorum_queues_and_confirms_loses_nothing(tmp_path, request):
    broker = start_local_broker(request.config, "rabbitmq")
    # The restart takes two rabbitmqctl calls, each booting an Erlang VM: ~1 s each on an idle
    # machine, 10-25 s each beside two CPU hogs (measured), when a fixed 16-s run ended before
    # the broker was back. The run must outlast the restart: a control call, timed now, sizes it.
    started = time.monotonic()
    rabbitmqctl(broker, "ping")
    duration_s = 16 + 3 * (time.monotonic() - started)

    def restart():  # the RabbitMQ application stops (every connection dropped) and starts again
        stopping = time.time()  # the node stops serving during the call, after its VM boots
        rabbitmqctl(broker, "stop_app")
        down_at = time.time()
        time.sleep(DOWN_S)
        rabbitmqctl(broker, "start_app")
        return stopping, down_at

    driver = {
        "name": "RabbitMQ",
        "driver": "rabbitmq",
        **broker.driver_config,
        "queueType": "quorum",
        "messagePersistence": True,
    }
    try:
        result, output, down, up_at = run_through_restart(tmp_path, driver, restart, duration_s)
    finally:
        broker.stop()
    check_outage_reported(result, output, down, up_at, queued=False)
    [outage] = [outage for outage in result["outages"] if outage["role"] == "publish"]
    # sends while the connection is being reopened fail and are counted, inside the outage
    assert 0 < outage["publishErrors"] <= result["totalPublishErrors"]
    assert "reopening it every 1.0 s" in output and "is back after" in output
    # confirmed messages on quorum queues survive; unacknowledged deliveries come again; and a
    # message whose confirm was lost with the connection counts as an error, not as sent, yet
    # may have been stored and delivered: at most the confirm window's worth
    assert result["totalLost"] == 0, (result["deliveryAccounting"], output)
    unconfirmed = result["totalMessagesReceived"] - result["totalMessagesSent"]
    assert 0 <= unconfirmed - result["totalDuplicates"] <= 1000
