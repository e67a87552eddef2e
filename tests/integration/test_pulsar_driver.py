"""The Pulsar driver against pulsar-lite (with ``--loadgen-upstream``, Apache Pulsar's
standalone): each setting reaches the client, observed where the broker lets us observe it.

pulsar-lite's limits, which these tests work around rather than test:
Exclusive and Failover subscriptions deliver duplicates (so exact counts use Shared, and those
types are only checked for "every message arrives"), seek is broken (a new Earliest
subscription reads a backlog instead), a second Exclusive consumer is refused only after a 10 s
timeout, there is no admin REST (a fake one on loopback checks the requests instead), the
partition count is one broker-wide setting (a second broker serves non-partitioned topics), and
two clients cannot share a subscription: it keys consumers by the client's consumer id alone
("Consumer 0 already exists"), so competing consumers here come from one driver.
"""

import json
import logging
import threading
import time
from base64 import b64decode, b64encode
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar
from urllib.request import Request, urlopen

import pulsar
import pytest

from harness.deliveries import Inbox, wait_for
from loadgen.base.errors import BrokerUnreachable
from loadgen.driver_api import NO_MESSAGE_ID, NO_SEND_TIME_NS, STAMP, TopicSpec, open_driver
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.local.process import free_port
from loadgen.driver_api.stamp import PREFIX_MARK, PREFIXED
from loadgen_drivers.pulsar.consumer import partition_of
from loadgen_drivers.pulsar.local.lite import start_pulsar_lite
from loadgen_drivers.pulsar.local.upstream import start_upstream_pulsar
from loadgen_drivers.pulsar.stamp import STAMP_PROPERTY

pytestmark = pytest.mark.integration


PARTITIONED = "public/partitioned"
"""On Apache Pulsar: the namespace whose topics are created with 16 partitions, as
pulsar-lite's ``pulsar_broker`` makes every topic."""


@pytest.fixture(scope="module")
def upstream_pulsar(request):
    """With ``--loadgen-upstream``, Apache Pulsar's standalone of this module's own, serving as
    both brokers below (``None`` without): a topic it auto-creates is not partitioned, except
    in :data:`PARTITIONED`, which a namespace policy gives 16."""
    if not request.config.getoption("--loadgen-upstream"):
        yield None
        return
    broker = start_upstream_pulsar()
    try:
        admin = f"{broker.endpoints['admin URL']}/admin/v2/namespaces/{PARTITIONED}"
        admin_request("PUT", admin, None)
        policy = {"allowAutoTopicCreation": True, "topicType": "partitioned",
                  "defaultNumPartitions": 16}  # fmt: skip
        admin_request("POST", f"{admin}/autoTopicCreation", policy)
        yield broker
    finally:
        broker.stop()


def admin_request(method, url, body):
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    with urlopen(Request(url, data, headers, method=method), timeout=30) as answer:
        assert answer.status in (200, 204), answer.status


@pytest.fixture(scope="module")
def pulsar_broker(upstream_pulsar):
    """A pulsar-lite of this module's own (16 partitions per topic): these tests count exact
    prefetches and splits, which other modules' subscriptions on a shared broker would muddle."""
    if upstream_pulsar is not None:
        yield upstream_pulsar
        return
    broker = start_pulsar_lite()
    yield broker
    broker.stop()


@pytest.fixture(scope="module")
def flat_broker(upstream_pulsar):
    """pulsar-lite with non-partitioned topics (its partition count is broker-wide)."""
    if upstream_pulsar is not None:
        yield upstream_pulsar
        return
    broker = start_pulsar_lite(default_partitions=0)
    yield broker
    broker.stop()


def merged(base, changes):
    return {k: {**base.get(k, {}), **changes.get(k, {})} for k in base.keys() | changes.keys()}


@pytest.fixture
def driver():
    """``driver(broker, producer={...}, ...)``: a driver on ``broker``, closed after the test."""
    opened = []

    def make(broker, **sections):
        config = merged(broker.driver_config, sections)
        opened.append(open_driver(DriverSpec("Pulsar", "pulsar", config, "pulsar-lite")))
        return opened[-1]

    yield make
    for each in opened:
        each.close()


@pytest.fixture
def topic(request, upstream_pulsar):
    """A fresh topic name; on Apache Pulsar, in :data:`PARTITIONED` for a test on
    ``pulsar_broker``."""
    partitioned = upstream_pulsar is not None and "pulsar_broker" in request.fixturenames
    namespace = PARTITIONED if partitioned else "public/default"
    return f"persistent://{namespace}/lg-{request.node.name[:30]}-{time.monotonic_ns()}"


def send_all(producer, count, key=None, size=0):
    """Send ``count`` numbered payloads (message id = number, intended time = 1000 × number),
    dots then the number, ``size`` bytes at least; return the error (or None) of each."""
    outcomes = []
    for index in range(count):
        key_ = key(index) if key else None
        payload = (b"%d" % index).rjust(size, b".")
        producer.send(key_, payload, lambda e, *_: outcomes.append(e), index, 1000 * index)
    assert producer.flush(30) == 0
    return outcomes


def read_back(broker, topic, count):
    """Every message of ``topic`` as the raw client sees it (a new Earliest subscription)."""
    client = pulsar.Client(broker.driver_config["client"]["serviceUrl"])
    consumer = client.subscribe(
        topic, "read-back", initial_position=pulsar.InitialPosition.Earliest
    )
    messages = [consumer.receive(5000) for _ in range(count)]
    client.close()
    return messages


def test_a_short_payload_carries_send_time_id_and_intended_time_in_one_property(
    driver, flat_broker, topic
):
    producer = driver(flat_broker).create_producer(topic)
    before = time.time_ns()
    assert send_all(producer, 3, size=PREFIXED.size - 1) == [None] * 3
    messages = read_back(flat_broker, topic, 3)
    assert all(list(m.properties()) == [STAMP_PROPERTY] for m in messages)
    assert all(m.data().startswith(b".") and len(m.data()) == PREFIXED.size - 1 for m in messages)
    stamps = [STAMP.unpack(b64decode(m.properties()[STAMP_PROPERTY])) for m in messages]
    assert all(before <= sent <= time.time_ns() for sent, _, _ in stamps)
    assert sorted((i, intended) for _, i, intended in stamps) == [(0, 0), (1, 1000), (2, 2000)]


def test_a_longer_payload_carries_them_in_its_first_32_bytes_and_keeps_its_size(
    driver, flat_broker, topic
):
    producer = driver(flat_broker).create_producer(topic)
    before = time.time_ns()
    payload = bytes(range(256)) * 4
    for index in range(3):
        producer.send(None, payload, lambda *_: None, index, 1000 * index)
    assert producer.flush(30) == 0
    messages = read_back(flat_broker, topic, 3)
    assert all(m.properties() == {} for m in messages)
    assert all(m.data()[PREFIXED.size :] == payload[PREFIXED.size :] for m in messages)
    assert all(len(m.data()) == len(payload) for m in messages)
    prefixes = [PREFIXED.unpack_from(m.data()) for m in messages]
    assert {mark for mark, *_ in prefixes} == {PREFIX_MARK}
    assert all(before <= sent <= time.time_ns() for _, sent, _, _ in prefixes)
    assert sorted((i, intended) for _, _, i, intended in prefixes) == [(0, 0), (1, 1000), (2, 2000)]


SHARED = {"subscriptionType": "Shared"}


def number(payload):
    """The number :func:`send_all` put at the end of ``payload``."""
    return int(payload.rsplit(b".", 1)[-1])


@pytest.mark.parametrize("size", [0, 64], ids=["in-a-property", "in-the-payload"])
def test_each_message_comes_back_with_its_id_intended_time_and_partition(
    driver, pulsar_broker, topic, size
):
    pulsar_driver = driver(pulsar_broker, consumer=SHARED)  # exact counts: see the module doc
    inbox = Inbox()
    pulsar_driver.create_consumer(topic, "sub", inbox)
    producer = pulsar_driver.create_producer(topic)
    keys = [b"key-%d" % (i % 40) if i % 3 else None for i in range(3000)]
    assert send_all(producer, 3000, key=keys.__getitem__, size=size) == [None] * 3000
    producer.send(None, b"probe", lambda *_: None, NO_MESSAGE_ID, NO_SEND_TIME_NS)
    assert producer.flush(10) == 0
    assert wait_for(lambda: len(inbox) >= 3001, timeout_s=30)
    got = {payload: stamp for payload, *stamp in inbox.stamps}
    assert len(got) == len(inbox) == 3001
    assert got.pop(b"probe")[1:3] == [NO_MESSAGE_ID, NO_SEND_TIME_NS]
    assert {number(p): (i, intended) for p, (_, i, intended, _) in got.items()} == {
        i: (i, 1000 * i) for i in range(3000)
    }
    assert {stamp[3] for stamp in got.values()} <= set(range(16))
    partitions_of_key = {}
    for payload, (_, _, _, partition) in got.items():
        if keys[number(payload)] is not None:
            partitions_of_key.setdefault(keys[number(payload)], set()).add(partition)
    assert len(partitions_of_key) == 40
    assert all(len(partitions) == 1 for partitions in partitions_of_key.values())
    assert len(set().union(*partitions_of_key.values())) > 1  # keys spread over partitions


def test_a_non_partitioned_topic_is_partition_0(driver, flat_broker, topic):
    pulsar_driver = driver(flat_broker, consumer=SHARED)
    inbox = Inbox()
    pulsar_driver.create_consumer(topic, "sub", inbox)
    assert send_all(pulsar_driver.create_producer(topic), 20) == [None] * 20
    assert wait_for(lambda: len(inbox) >= 20)
    assert {stamp[4] for stamp in inbox.stamps} == {0}


def test_partition_indexes_come_from_the_topic_names_suffix():
    assert partition_of("persistent://public/default/t-partition-11") == 11
    assert partition_of("persistent://public/default/t") == 0
    assert partition_of("persistent://public/default/t-partition-x") == 0


def test_messages_without_a_well_formed_stamp_are_skipped_and_counted(driver, flat_broker, topic):
    pulsar_driver = driver(flat_broker, consumer=SHARED)
    inbox = Inbox()
    consumer = pulsar_driver.create_consumer(topic, "sub", inbox)
    client = pulsar.Client(flat_broker.driver_config["client"]["serviceUrl"])
    raw = client.create_producer(topic)
    sent_ns = time.time_ns()
    raw.send(b"send time only", properties={"lg-send-ns": str(sent_ns)})
    raw.send(b"foreign")
    raw.send(b"malformed", properties={STAMP_PROPERTY: "AAAA"})  # base64 of 3 bytes, not 24
    raw.send(b"not base64", properties={STAMP_PROPERTY: "1763900000123456789 1 2"})
    raw.send(PREFIX_MARK + bytes(PREFIXED.size - len(PREFIX_MARK) - 1))  # a byte short
    stamp = b64encode(STAMP.pack(sent_ns, 7, sent_ns)).decode()
    raw.send(b"ours", properties={STAMP_PROPERTY: stamp})
    client.close()
    assert wait_for(lambda: len(inbox) == 1 and consumer.foreign.count == 5)
    time.sleep(0.3)  # nothing else may arrive: absence needs a wait
    assert inbox.stamps == [(b"ours", sent_ns, 7, sent_ns, 0)]
    assert consumer.foreign.count == 5
    assert consumer.errors == 0


@pytest.mark.parametrize(("batching", "most_entries"), [(True, 50), (False, 500)])
def test_batching_decides_how_many_messages_share_an_entry(
    driver, flat_broker, topic, batching, most_entries
):
    producer = driver(
        flat_broker, producer={"batchingEnabled": batching, "batchingMaxPublishDelayMs": 20}
    ).create_producer(topic)
    assert send_all(producer, 500) == [None] * 500
    ids = [m.message_id() for m in read_back(flat_broker, topic, 500)]
    entries = {(i.ledger_id(), i.entry_id()) for i in ids}
    if batching:
        assert len(entries) <= most_entries
        assert max(i.batch_index() for i in ids) > 0
    else:
        assert len(entries) == 500


STRANDED_ATTEMPTS = 3


def prefetched_by_a_paused_consumer(broker, driver, topic, consumer_settings, count):
    """How many of ``count`` messages a paused consumer's receiver queues took: a second
    consumer of the subscription, started afterwards, gets the rest at once, and those held
    back once the paused one closes unacknowledged. Batching is off, since the broker hands
    out whole batches whatever the permits.

    pulsar-lite defect, reproduced with the bare client (1 run in 6 to 25, with or without the
    total cap): now and then the second consumer gets nothing at all, not even after the paused
    one closes. That attempt is dropped and the measurement repeated on a fresh topic, at most
    ``STRANDED_ATTEMPTS`` times; any other outcome is asserted at once."""
    for attempt in range(STRANDED_ATTEMPTS):
        prefetched = _prefetch_once(broker, driver, f"{topic}-{attempt}", consumer_settings, count)
        if prefetched is not None:
            return prefetched
    pytest.fail(f"the second consumer got nothing in {STRANDED_ATTEMPTS} attempts")


def _prefetch_once(broker, driver, topic, consumer_settings, count):
    consumer = {**SHARED, **consumer_settings}  # a second consumer gets messages at once
    pulsar_driver = driver(broker, producer={"batchingEnabled": False}, consumer=consumer)
    held, others = [], []
    paused = pulsar_driver.create_consumer(topic, "sub", lambda p, *_: held.append(p))
    paused.pause()
    assert send_all(pulsar_driver.create_producer(topic), count) == [None] * count
    time.sleep(0.5)
    second = pulsar_driver.create_consumer(topic, "sub", lambda p, *_: others.append(p))
    time.sleep(1.5)
    prefetched = count - len(others)
    paused.close()
    if not others and not wait_for(lambda: others, timeout_s=3.0):
        logging.warning("pulsar-lite stranded the second consumer of %s; trying again", topic)
        second.close()
        return None
    assert wait_for(lambda: len(others) == count), (
        f"{count - len(others)} of the {prefetched} prefetched messages never came back"
    )
    assert held == []  # paused: its listener never ran
    assert sorted(others) == sorted(b"%d" % i for i in range(count))
    return prefetched


def test_a_paused_consumer_prefetches_exactly_its_receiver_queue(driver, flat_broker, topic):
    assert (
        prefetched_by_a_paused_consumer(flat_broker, driver, topic, {"receiverQueueSize": 10}, 300)
        == 10
    )


def test_receiver_queues_are_per_partition_capped_by_the_total(driver, pulsar_broker, topic):
    assert (
        prefetched_by_a_paused_consumer(
            pulsar_broker, driver, topic, {"receiverQueueSize": 10}, 1600
        )
        == 16 * 10
    )
    capped = {"receiverQueueSize": 100, "maxTotalReceiverQueueSizeAcrossPartitions": 32}
    capped_topic = f"{topic}-capped"
    assert prefetched_by_a_paused_consumer(pulsar_broker, driver, capped_topic, capped, 1600) == 32


def test_shared_consumers_split_the_messages_without_duplicates(driver, pulsar_broker, topic):
    # Batching off: the broker hands a whole batch to one consumer, and each partition's
    # dispatcher starts with the first consumer, so 2000 messages in a few big batches went all
    # to one of them in 3 runs of 30. Small receiver queues: with 200 × 16 partitions the first
    # consumer to subscribe could take all 2000 before the second asks.
    pulsar_driver = driver(
        pulsar_broker,
        producer={"batchingEnabled": False},
        consumer={**SHARED, "receiverQueueSize": 10},
    )
    got = [[], []]
    consumers = [
        pulsar_driver.create_consumer(topic, "sub", lambda p, *_, box=box: box.append(p))
        for box in got
    ]
    producer = pulsar_driver.create_producer(topic)
    assert send_all(producer, 2000) == [None] * 2000
    assert wait_for(lambda: len(got[0]) + len(got[1]) >= 2000)
    time.sleep(0.3)
    assert sorted(got[0] + got[1]) == sorted(b"%d" % i for i in range(2000))
    # both consumers took part (how evenly depends on when each got its permits in)
    assert min(len(got[0]), len(got[1])) > 0
    for consumer in consumers:
        consumer.close()


def test_key_shared_with_key_based_batching_keeps_each_key_on_one_consumer(
    driver, pulsar_broker, topic
):
    pulsar_driver = driver(
        pulsar_broker,
        producer={"batchingType": "key-based"},
        consumer={"subscriptionType": "Key_Shared"},
    )
    got = [[], []]
    for box in got:
        pulsar_driver.create_consumer(topic, "sub", lambda p, *_, box=box: box.append(p))
    producer = pulsar_driver.create_producer(topic)
    keys = [b"key-%d" % (i % 40) for i in range(2000)]
    assert send_all(producer, 2000, key=keys.__getitem__) == [None] * 2000
    assert wait_for(lambda: len(got[0]) + len(got[1]) >= 2000)
    seen_by = [{keys[int(p)] for p in box} for box in got]
    assert not seen_by[0] & seen_by[1]


@pytest.mark.parametrize(
    ("kind", "ack_mode"), [("Exclusive", "individual"), ("Failover", "cumulative")]
)
def test_exclusive_and_failover_deliver_every_message(
    driver, flat_broker, upstream_pulsar, topic, kind, ack_mode
):
    """Exact counts are pulsar-lite's bug to break (duplicates), so there: every message
    arrives; on Apache Pulsar, each exactly once."""
    pulsar_driver = driver(flat_broker, consumer={"subscriptionType": kind, "ackMode": ack_mode})
    got = []
    pulsar_driver.create_consumer(topic, "sub", lambda p, *_: got.append(p))
    producer = pulsar_driver.create_producer(topic)
    assert send_all(producer, 200) == [None] * 200
    wanted = {b"%d" % i for i in range(200)}
    assert wait_for(lambda: wanted <= set(got))
    if upstream_pulsar is not None:
        time.sleep(0.3)  # a duplicate would come as soon: absence needs a wait
        assert sorted(got) == sorted(wanted)


def test_acknowledged_messages_are_not_delivered_again(driver, flat_broker, topic):
    pulsar_driver = driver(flat_broker)
    got = []
    consumer = pulsar_driver.create_consumer(topic, "sub", lambda p, *_: got.append(p))
    producer = pulsar_driver.create_producer(topic)
    assert send_all(producer, 300) == [None] * 300
    assert wait_for(lambda: len(got) == 300)
    time.sleep(0.3)  # the client sends grouped acks every 100 ms
    consumer.close()
    again = []
    pulsar_driver.create_consumer(topic, "sub", lambda p, *_: again.append(p))
    time.sleep(1)
    assert again == []


def test_a_full_queue_without_blocking_fails_sends_and_counts_them(driver, flat_broker, topic):
    settings = {"pendingQueueSize": 10, "batchingMaxPublishDelayMs": 200}
    failing = driver(flat_broker, producer={**settings, "blockIfQueueFull": False})
    outcomes = send_all(failing.create_producer(topic), 200)
    errors = [error for error in outcomes if error is not None]
    assert len(outcomes) == 200
    assert 0 < len(errors) < 200
    assert all("ProducerQueueIsFull" in str(error) for error in errors)
    blocking = driver(flat_broker, producer={**settings, "blockIfQueueFull": True})
    assert send_all(blocking.create_producer(topic), 200) == [None] * 200


def test_partition_switch_frequency_keeps_a_burst_on_few_partitions(driver, pulsar_broker, topic):
    sticky = driver(
        pulsar_broker,
        producer={
            "batchingMaxPublishDelayMs": 1,
            "batchingPartitionSwitchFrequencyByPublishDelay": 10_000,
        },
    )
    assert send_all(sticky.create_producer(topic), 300) == [None] * 300
    partitions = {m.topic_name() for m in read_back(pulsar_broker, topic, 300)}
    assert len(partitions) <= 2  # one partition per 10 s, and the burst took well under that


def test_a_wrong_service_url_fails_within_the_bound_naming_it(driver, flat_broker):
    url = f"pulsar://127.0.0.1:{free_port()}"
    wrong = open_driver(DriverSpec("Pulsar", "pulsar", {"client": {"serviceUrl": url}}, "x"))
    started = time.monotonic()
    with pytest.raises(BrokerUnreachable) as caught:
        wrong.check_reachable(3)
    assert time.monotonic() - started < 5
    assert url in str(caught.value)
    driver(flat_broker).check_reachable(10)  # and a right one passes


class FakeAdmin(BaseHTTPRequestHandler):
    """An admin REST API that records requests and answers like Pulsar (204, clusters list)."""

    requests: ClassVar[list] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        self.requests.append((self.command, self.path, body))
        reply = b'["standalone"]' if self.path.endswith("/clusters") else b""
        self.send_response(200 if reply else 204)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    do_GET = do_PUT = do_POST = do_DELETE = _answer

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def fake_admin():
    FakeAdmin.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeAdmin)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", FakeAdmin.requests
    server.shutdown()


def test_with_admin_rest_the_driver_creates_and_removes_namespace_and_topics(
    driver, flat_broker, fake_admin
):
    url, requests = fake_admin
    pulsar_driver = driver(flat_broker, client={"httpUrl": url, "clusterName": "c1"})
    namespace = pulsar_driver.namespace
    prefix = pulsar_driver.topic_name_prefix
    pulsar_driver.create_topics([TopicSpec(f"{prefix}-a", 4), TopicSpec(f"{prefix}-b", 1)])
    pulsar_driver.delete_topics([f"{prefix}-a", f"{prefix}-b"])
    pulsar_driver.close()
    path = prefix.replace("persistent://", "persistent/")
    assert (
        "PUT",
        "/admin/v2/tenants/benchmark",
        {"adminRoles": [], "allowedClusters": ["c1"]},
    ) in requests
    assert ("PUT", f"/admin/v2/namespaces/{namespace}", None) in requests
    assert (
        "POST",
        f"/admin/v2/namespaces/{namespace}/persistence",
        {
            "bookkeeperEnsemble": 3,
            "bookkeeperWriteQuorum": 3,
            "bookkeeperAckQuorum": 2,
            "managedLedgerMaxMarkDeleteRate": 1.0,
        },
    ) in requests
    assert ("POST", f"/admin/v2/namespaces/{namespace}/deduplication", False) in requests
    assert ("PUT", f"/admin/v2/{path}-a/partitions", 4) in requests
    assert not any(p.startswith(f"/admin/v2/{path}-b") for m, p, _ in requests if m == "PUT")
    assert ("DELETE", f"/admin/v2/{path}-a/partitions?force=true", None) in requests
    assert ("DELETE", f"/admin/v2/{path}-b?force=true", None) in requests
    assert requests[-1] == ("DELETE", f"/admin/v2/namespaces/{namespace}", None)


def test_without_admin_rest_topics_are_the_brokers_and_the_log_says_so(
    driver, pulsar_broker, topic, caplog
):
    pulsar_driver = driver(pulsar_broker, client={"httpUrl": f"http://127.0.0.1:{free_port()}"})
    with caplog.at_level(logging.INFO, logger="loadgen.pulsar"):
        pulsar_driver.create_topics([TopicSpec(topic, 4)])
        pulsar_driver.delete_topics([topic])
    assert "no admin REST API at http://127.0.0.1" in caplog.text
    assert "4 asked, 16 made" in caplog.text
    assert "stay on the broker" in caplog.text
