"""The Pravega driver's whole life cycle against loadgen's local Pravega, through the real client.

The local Pravega (loadgen_drivers.pravega.local) speaks the controller's gRPC and the segment
store's
wire protocol to the ``pravega`` client; what it does not model is in docs/drivers/pravega-local.md.
"""

import asyncio
import json
import secrets
import subprocess
import sys
import threading
import time
import uuid

import pytest

import loadgen
from loadgen.distributed.placement import Placement
from loadgen.distributed.spawn import local_workers
from loadgen.driver_api import TopicSpec
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import execute, run_one
from loadgen_drivers.pravega import Driver
from loadgen_drivers.pravega.client import open_manager
from loadgen_drivers.pravega.events import clean_name

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def controller(pravega_broker):
    return pravega_broker.address


def spec(controller, scope=None, **settings):
    scope = scope or f"lg-{uuid.uuid4().hex[:8]}"
    config = {"client": {"controllerURI": controller, "scopeName": scope}, **settings}
    return DriverSpec("Pravega", "pravega", config, "local pravega")


def small_workload(rate=1000, partitions=4, seconds=6, **changes):
    fields = {
        "name": "pravega local",
        "topics": 1,
        "partitionsPerTopic": partitions,
        "messageSize": 512,
        "subscriptionsPerTopic": 1,
        "consumerPerSubscription": 1,
        "producersPerTopic": 1,
        "producerRate": rate,
        "testDurationMinutes": seconds / 60,
        "warmupDurationMinutes": 0,
    }
    return loadgen.workload(**{**fields, **changes})


def run(workload, driver_spec, tmp_path, **options):
    chosen = RunOptions(**{"stats_interval_s": 1, **options})
    return run_one(RunRequest(workload, driver_spec, chosen, out_dir=tmp_path)).result


def assert_exact(result):
    assert result["totalMessagesSent"] == result["totalMessagesReceived"] > 0
    assert (result["totalLost"], result["totalDuplicates"]) == (0, 0)
    assert result["totalPublishErrors"] == 0


def test_a_tailing_run_holds_its_rate_and_reads_every_event_once(controller, tmp_path):
    scope = f"lg-{uuid.uuid4().hex[:8]}"
    result = run(small_workload(rate=2000, seconds=6), spec(controller, scope), tmp_path)
    assert_exact(result)
    assert result["verdicts"]["rate"]["held"], result["verdicts"]["rate"]
    assert result["aggregatedEndToEndLatency50pct"] > 0
    assert scope not in open_manager(controller).list_scope()  # streams, groups, scope: gone


class Received:
    """What a consumer delivered: (message id, payload) in arrival order."""

    def __init__(self):
        self.items = []
        self.lock = threading.Lock()

    def __call__(self, payload, sent_ns, message_id, intended_ns, partition):
        with self.lock:
            self.items.append((message_id, payload))


def wait_for(condition, timeout):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def send_keyed(controller, keys, count):
    """``count`` events over ``keys`` in turn (None: no routing key) on a 4-segment stream, read
    back by the driver's reader; returns its deliveries and how many segments hold events (a
    plain reader's events at offset 0: each non-empty segment has exactly one)."""
    driver_spec = spec(controller, deleteStreams=False)
    driver = Driver.from_config(driver_spec)
    topic = f"routing-{uuid.uuid4().hex[:6]}"
    driver.create_topics([TopicSpec(topic, 4)])
    received = Received()
    consumer = driver.create_consumer(topic, "sub", received)
    producer = driver.create_producer(topic)
    try:
        for message_id in range(count):
            payload = b"%d" % message_id + b"." * 40
            producer.send(keys[message_id % len(keys)], payload, lambda *_: None, message_id, 0)
        producer.flush(30)
        wait_for(lambda: len(received.items) == count, timeout=30)
    finally:
        consumer.close()
        producer.close()
        driver.delete_topics([topic])  # sealed and kept: deleteStreams is false
        driver.close()
    scope = driver_spec.config["client"]["scopeName"]
    events = read_all(open_manager(controller), scope, clean_name(topic), expected=count)
    return received.items, sum(offset == 0 for offset, _ in events)


def test_random_nano_keys_spread_events_over_every_segment_keeping_each_keys_order(controller):
    keys = [b"%d" % n for n in range(64)]
    items, segments_used = send_keyed(controller, keys, 640)
    assert sorted(message_id for message_id, _ in items) == list(range(640))
    assert segments_used == 4
    for key_index in range(len(keys)):  # one key, one segment: its events in sending order
        ids = [message_id for message_id, _ in items if message_id % len(keys) == key_index]
        assert ids == sorted(ids)


def test_events_without_a_key_are_all_read_and_spread(controller):
    items, segments_used = send_keyed(controller, [None], 400)
    assert sorted(message_id for message_id, _ in items) == list(range(400))
    assert segments_used >= 2


def test_transactions_of_ten_commit_every_event_once(controller, tmp_path):
    driver_spec = spec(controller, enableTransaction=True, eventsPerTransaction=10)
    result = run(small_workload(rate=200, seconds=5), driver_spec, tmp_path)
    assert_exact(result)


def test_an_aborted_transaction_delivers_nothing_and_a_committed_one_everything(controller):
    manager = open_manager(controller)
    scope, stream = f"lg-{uuid.uuid4().hex[:8]}", "txn"
    manager.create_scope(scope)
    manager.create_stream(scope, stream, 2)
    writer = manager.create_transaction_writer(scope, stream, 7)
    aborted = writer.begin_txn()
    for n in range(5):
        aborted.write_event(f"aborted-{n}", "k")
    aborted.abort()
    committed = writer.begin_txn()
    for n in range(5):
        committed.write_event(f"committed-{n}", "k")
    committed.commit()
    events = read_all(manager, scope, stream, expected=5)
    assert [data for _, data in events] == [f"committed-{n}".encode() for n in range(5)]


def read_all(manager, scope, stream, expected, timeout=20):
    group = manager.create_reader_group(f"check-{uuid.uuid4().hex[:6]}", scope, stream)
    reader = group.create_reader("check")

    async def take():
        events = []
        deadline = time.monotonic() + timeout
        while len(events) < expected and time.monotonic() < deadline:
            piece = await asyncio.wait_for(reader.get_segment_slice_async(), timeout)
            events += [(event.offset(), event.data()) for event in piece]
            reader.release_segment(piece)
        return events

    try:
        return asyncio.run(take())
    finally:
        reader.reader_offline()


def test_a_catch_up_run_builds_and_drains_its_backlog(controller, tmp_path):
    workload = small_workload(
        rate=2000,
        partitions=2,
        seconds=4,
        subscriptionsPerTopic=2,
        tailingSubscriptionsPerTopic=1,
        consumerBacklogSizeGB=4000 * 512 / 1024**3,
    )
    result = run(workload, spec(controller), tmp_path, catch_up_timeout_s=60)
    block = result["catchUp"]
    assert block["targetReached"] and block["drained"], block
    assert result["totalMessagesReceived"] == 2 * result["totalMessagesSent"]
    assert (result["totalLost"], result["totalDuplicates"]) == (0, 0)


def test_a_consumer_only_run_reads_a_stream_another_run_filled(controller, tmp_path):
    """A producer-only run fills a named stream and keeps it; a consumer-only run then reads
    it from its head: every event the first run sent."""
    driver_spec = spec(controller)
    named = {"topic_names": ("filled",)}
    filling = small_workload(rate=1000, partitions=2, seconds=3, subscriptionsPerTopic=0)
    filled = run(filling, driver_spec, tmp_path / "filling", **named)
    reading = small_workload(rate=0, partitions=2, seconds=3, producersPerTopic=0)
    result = run(reading, driver_spec, tmp_path / "reading", **named)
    assert result["totalMessagesSent"] == 0
    assert result["totalMessagesReceived"] == filled["totalMessagesSent"] > 2_000
    assert result["aggregatedEndToEndLatency50pct"] > 0


def test_a_consumer_only_run_without_stamps_reads_what_a_plain_client_wrote(controller, tmp_path):
    """Another tool's events carry no stamp: with ``includeTimestampInEvent: false`` each one is
    counted as received (no latency is recorded)."""
    manager = open_manager(controller)
    scope = f"lg-{uuid.uuid4().hex[:8]}"
    manager.create_scope(scope)
    manager.create_stream(scope, "elsewhere", 2)
    writer = manager.create_writer(scope, "elsewhere")
    for n in range(300):
        writer.write_event(f"written by another tool {n}", f"key-{n % 7}")
    writer.flush()
    driver_spec = spec(controller, scope, includeTimestampInEvent=False)
    reading = small_workload(rate=0, partitions=2, seconds=3, producersPerTopic=0)
    result = run(reading, driver_spec, tmp_path, topic_names=("elsewhere",))
    assert result["totalMessagesReceived"] == 300
    assert result["aggregatedEndToEndLatency50pct"] == 0


def loadgen_cli(*args, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "loadgen", *args], capture_output=True, text=True, timeout=timeout
    )


def test_probe_with_a_pravega_url_loses_nothing(controller):
    url = controller.replace("tcp://", "pravega://")
    done = loadgen_cli("probe", url, "--duration", "2s", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.splitlines()[-1])
    assert summary["sent"] == summary["received"] > 0 and summary["errors"] == 0


def test_run_from_flags_with_a_pravega_url_is_exact(controller, tmp_path):
    url = controller.replace("tcp://", "pravega://")
    done = loadgen_cli(
        "run", url, "--rate", "0.5k", "--size", "1KiB", "--partitions", "2", "--duration", "3s",
        "--stats-interval", "1s", "--processes", "1", "--quiet", "--no-report",
        "-o", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = tmp_path.glob("*.json")
    assert_exact(json.loads(path.read_text()))


def test_two_workers_split_a_run_into_producer_and_consumer_exactly(controller):
    token = secrets.token_urlsafe(16)
    with local_workers(2, token) as spawned:
        placement = Placement(workers=tuple(spawned.urls), token=token)
        options = RunOptions(duration_s=4, warmup_s=0, stats_interval_s=1)
        request = RunRequest(
            small_workload(rate=1000), spec(controller), options, placement=placement
        )
        _, result, outcome = execute(request)
    assert not outcome.incomplete, outcome.stop_detail
    assert list(result["run"]["workerRoles"].values()) == ["producer", "consumer"]
    assert_exact(result)
