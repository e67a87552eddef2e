"""The producer loop's burst, on both engines: the same messages reach the client either way.

``c`` is ``loadgen.engine._burst`` calling what the producer's ``prefixed_send`` describes;
``python``
hands each message to the producer's ``send``, which stamps it itself. The producers here do
both as the Kafka driver does, so the client sees the same calls, ids, intended times, keys and
stamps from either engine.
"""

import gc
import os
import subprocess
import sys
import time
import tracemalloc

import pytest

from loadgen.driver_api import ACK, KEY, VALUE, PrefixedSend, TopicSpec
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.stamp import PREFIX_BYTES, Prefixer, read_prefix
from loadgen.engine import burst as bursts
from loadgen.engine import recorder as recorders
from loadgen.engine.burst import Target, burst_sender
from loadgen.engine.producer_loop import ProducerLoop
from loadgen.engine.recorder import ProducerRecorder
from loadgen_drivers.memory import Driver as MemoryDriver

BUILT = bursts._burst is not None
compiled_only = pytest.mark.skipif(not BUILT, reason="loadgen.engine._burst is not built")
START_NS = 5_000_000_000
INTERVAL_NS = 1e9 / 3  # a float whose multiples round: the C product must truncate as int() does
TO_WALL = 1_700_000_000_000_000_000
PAYLOADS = [bytes(range(40)), b"y" * 100, b"z" * PREFIX_BYTES]


class Ack:
    """One message's acknowledgement: remembers what it was called with."""

    def __init__(self, message_id):
        self.message_id = message_id
        self.results = []

    def __call__(self, *result):
        self.results.append(result)


class Binder:
    """A ``bind`` that records its arguments and hands out :class:`Ack` objects."""

    def __init__(self):
        self.bound = []
        self.acks = []

    def __call__(self, message_id, intended_ns, sent_ns):
        self.bound.append((message_id, intended_ns, sent_ns))
        self.acks.append(Ack(message_id))
        return self.acks[-1]


class Keys:
    def __init__(self):
        self.seen = []

    def __call__(self, now_ns):
        self.seen.append(now_ns)
        return b"k%d" % len(self.seen)


class KafkaLike:
    """A producer made as the Kafka driver's: ``send`` stamps the prefix and produces,
    ``prefixed_send`` offers ``produce`` itself, and a full queue (``BufferError`` for the call
    numbers in ``full_at``, once each) goes to ``resend``, which queues the message anyway."""

    def __init__(self, full_at=()):
        self.calls = []
        self.resent = []
        self.full_at = set(full_at)
        self._stamped = Prefixer().stamped

    def produce(self, topic, value, key, partition, on_delivery):
        if len(self.calls) in self.full_at:
            self.full_at.discard(len(self.calls))
            raise BufferError("queue full")
        self.calls.append((topic, value, key, partition, on_delivery))

    def send(self, key, payload, on_done, message_id, intended_ns):
        value = self._stamped(payload, time.time_ns(), message_id, intended_ns)
        try:
            self.produce("topic", value, key, -1, on_done)
        except BufferError as error:
            self.resend(error, key, value, on_done)

    def prefixed_send(self):
        return PrefixedSend(self.produce, ("topic", VALUE, KEY, -1, ACK), self.resend)

    def resend(self, error, key, value, on_done):
        self.resent.append(read_prefix(value)[1])
        self.calls.append(("topic", value, key, -1, on_done))

    def poll(self, timeout_s=0.0):
        pass


class Stores(KafkaLike):
    """A producer whose client acknowledges as it returns (as the memory driver's store)."""

    def send(self, key, payload, on_done, message_id, intended_ns):
        self.calls.append(self._stamped(payload, time.time_ns(), message_id, intended_ns))
        on_done(None)

    def prefixed_send(self):
        return PrefixedSend(self.store, (VALUE, KEY))

    def store(self, value, key):
        self.calls.append(value)


def send_all(producers, end, keys=None, bases=None, payloads=PAYLOADS, bind=None):
    """Messages ``[0, end)`` in bursts of 512, as the loop sends them; the ``bind`` used."""
    bind = bind or Binder()
    bases = bases or [i << 40 for i in range(len(producers))]
    send = burst_sender(producers, payloads, keys, bind, bases, TO_WALL)
    for first in range(0, end, 512):
        send(first, min(first + 512, end), START_NS, INTERVAL_NS)
    return bind


def test_every_message_carries_its_id_intended_time_key_and_stamp(burst_engine):
    producers = [KafkaLike(), KafkaLike()]
    keys = Keys()
    wall_before, mono_before = time.time_ns(), time.perf_counter_ns()
    bind = send_all(producers, 12, keys)
    mono_after, wall_after = time.perf_counter_ns(), time.time_ns()

    assert [m for m, _, _ in bind.bound] == [((i % 2) << 40) + i // 2 for i in range(12)]
    intended = [START_NS + int(i * INTERVAL_NS) for i in range(12)]
    assert [i for _, i, _ in bind.bound] == intended
    assert [now for _, _, now in bind.bound] == keys.seen  # the key source saw the bind's clock
    assert all(mono_before <= now <= mono_after for now in keys.seen)
    assert keys.seen == sorted(keys.seen)
    for index in range(12):
        topic, value, key, partition, ack = producers[index % 2].calls[index // 2]
        assert (topic, key, partition, ack) == ("topic", b"k%d" % (index + 1), -1, bind.acks[index])
        sent_ns, message_id, intended_wall = read_prefix(value)
        assert wall_before <= sent_ns <= wall_after
        assert (message_id, intended_wall) == (bind.bound[index][0], intended[index] + TO_WALL)
        payload = PAYLOADS[index % len(PAYLOADS)]
        assert len(value) == len(payload) and value[PREFIX_BYTES:] == payload[PREFIX_BYTES:]
    assert all(ack.results == [] for ack in bind.acks)  # the client acknowledges, not the burst


@compiled_only
def test_both_engines_send_the_same_messages(monkeypatch):
    """Everything but the clock readings is equal, message for message."""
    sent = []
    for compiled in (False, True):
        monkeypatch.setattr(bursts, "COMPILED", compiled)
        producers = [KafkaLike(), KafkaLike()]
        bind = send_all(producers, 3000, Keys(), bases=[3 << 40, 5 << 40])
        calls = [
            (key, read_prefix(value)[1:], value[PREFIX_BYTES:], bind.acks.index(ack))
            for producer in producers
            for _, value, key, _, ack in producer.calls
        ]
        sent.append(([(m, intended) for m, intended, _ in bind.bound], calls))
    assert sent[0] == sent[1]


@pytest.mark.parametrize(
    ("index", "interval"),
    [
        *((i, dt) for i in (0, 1, 2, 3, 10**6 + 7, 2**33 + 3) for dt in (1e9 / 3, 1e9 / 7, 1e9)),
        (10**9 + 1, 1e9 / 1_234_567),
        (2**53 + 5, 0.1),  # an index a double cannot hold exactly: rounded as Python rounds it
        (2**60 + 1, 3.7),
    ],
)
def test_intended_times_are_pythons_int_of_the_float_product(burst_engine, index, interval):
    bind = Binder()
    send = burst_sender([KafkaLike()], PAYLOADS, None, bind, [0], 0)
    send(index, index + 1, -(2**40), interval)
    assert bind.bound[0][1] == -(2**40) + int(index * interval)


def test_a_call_without_an_ack_slot_is_acknowledged_when_it_returns(burst_engine):
    producer = Stores()
    bind = send_all([producer], 5)
    assert [read_prefix(value)[1] for value in producer.calls] == list(range(5))
    assert [ack.results for ack in bind.acks] == [[(None,)]] * 5


@compiled_only
def test_a_call_that_raises_ends_the_compiled_burst_and_names_its_message():
    producer = KafkaLike(full_at=[3])
    bind = Binder()
    burst = bursts._burst.Burst(
        [Target.of(producer.prefixed_send())], PAYLOADS, Keys(), bind, [0], 0
    )
    index, error, key, value, ack = burst.run(0, 8, START_NS, INTERVAL_NS)
    assert index == 3 and isinstance(error, BufferError) and error.__traceback__ is not None
    assert key == b"k4" and ack is bind.acks[3] and read_prefix(value)[1] == 3
    assert len(producer.calls) == 3 and len(bind.bound) == 4  # nothing after it was bound
    assert ack.results == []


class RefusingStore(Stores):
    """A store that refuses the calls numbered in ``refused_at`` once each; the resend stores
    the message and acknowledges it, as a driver whose client acknowledges as it returns."""

    def __init__(self, refused_at):
        super().__init__()
        self.refused_at = set(refused_at)
        self.attempts = 0

    def store(self, value, key):
        self.attempts += 1
        if self.attempts - 1 in self.refused_at:
            raise BufferError("store full")
        self.calls.append(value)

    def send(self, key, payload, on_done, message_id, intended_ns):
        value = self._stamped(payload, time.time_ns(), message_id, intended_ns)
        try:
            self.store(value, key)
        except BufferError as error:
            self.resend(error, key, value, on_done)
        else:
            on_done(None)

    def prefixed_send(self):
        return PrefixedSend(self.store, (VALUE, KEY), self.resend)

    def resend(self, error, key, value, on_done):
        self.resent.append(read_prefix(value)[1])
        self.calls.append(value)
        on_done(None)


@pytest.mark.skipif(not recorders.COMPILED, reason="the compiled recorders are not in use")
@pytest.mark.parametrize("refused_at", [(), (0, 3, 4)])
def test_a_compiled_recorder_records_each_message_once_without_an_ack_object(
    burst_engine, refused_at
):
    """The C burst records a compiled recorder's messages in C (no ack object, no boxed ints)
    where the call is its own acknowledgement; a refused message is bound for its resend."""
    producer, recorder = RefusingStore(refused_at), ProducerRecorder()
    send_all([producer], 10, bind=recorder.bind)
    sample = recorder.take()
    assert sample.acked_ids().tolist() == [read_prefix(v)[1] for v in producer.calls]
    assert sorted(sample.acked_ids().tolist()) == list(range(10))
    assert producer.resent == list(refused_at)
    assert sample.publish.total == sample.publish_delay.total == 10
    assert sample.publish_from_intended.total == 10 and sample.errors == 0


def test_a_message_the_client_refused_is_resent_once_in_its_place(burst_engine):
    """No message lost, bound twice or sent twice."""
    producers = [KafkaLike(full_at=[1, 2]), KafkaLike(full_at=[4])]
    bind = send_all(producers, 20)
    assert [m for m, _, _ in bind.bound] == [((i % 2) << 40) + i // 2 for i in range(20)]
    assert [p.resent for p in producers] == [[1, 2], [(1 << 40) + 4]]
    for p, producer in enumerate(producers):
        assert [read_prefix(value)[1] for _, value, *_ in producer.calls] == [
            (p << 40) + i for i in range(10)
        ]
        assert [ack for *_, ack in producer.calls] == bind.acks[p::2]


def test_an_error_the_driver_does_not_handle_ends_the_run(burst_engine):
    class Broken(KafkaLike):
        def produce(self, *args):
            raise RuntimeError("client closed")

        def prefixed_send(self):
            return PrefixedSend(self.produce, ("topic", VALUE, KEY, -1, ACK))  # resend: reraise

    with pytest.raises(RuntimeError, match="client closed"):
        send_all([Broken()], 3)


def test_errors_of_the_key_source_and_bind_propagate(burst_engine):
    def no_keys(now_ns):
        raise KeyError("no keys")

    producer = KafkaLike()
    with pytest.raises(KeyError):
        send_all([producer], 2, no_keys)

    def refuse(message_id, intended_ns, sent_ns):
        raise ValueError("negative delay")

    with pytest.raises(ValueError, match="negative delay"):
        send_all([producer], 2, bind=refuse)
    assert producer.calls == []


@compiled_only
def test_the_compiled_burst_takes_bytes_with_room_for_the_stamp():
    target, make = Target.of(KafkaLike().prefixed_send()), bursts._burst.Burst
    with pytest.raises(ValueError):
        make([target], [b"x" * (PREFIX_BYTES - 1)], None, Binder(), [0], 0)
    with pytest.raises(TypeError):
        make([target], [bytearray(64)], None, Binder(), [0], 0)
    with pytest.raises(ValueError):
        make([target], PAYLOADS, None, Binder(), [0, 1], 0)
    with pytest.raises(ValueError):
        make([target._replace(key_at=9)], PAYLOADS, None, Binder(), [0], 0)


@pytest.mark.parametrize(
    "args",
    [("t", VALUE), ("t", KEY), (VALUE, VALUE, KEY), (VALUE, KEY, ACK, ACK)],
    ids=["no-key", "no-value", "two-values", "two-acks"],
)
def test_a_template_takes_value_and_key_once_and_ack_at_most_once(args):
    with pytest.raises(ValueError):
        Target.of(PrefixedSend(print, args))


def test_bursts_keep_no_references_and_leak_no_memory(burst_engine):
    """Refcounts of everything a burst hands on are back where they were after many bursts,
    through the resend path too; allocations stay flat."""
    ack, key = Ack(0), b"the-key"
    payloads = [b"p" * 64, b"q" * 1024]

    class Counting(KafkaLike):
        def produce(self, topic, value, key, partition, on_delivery):
            self.sends = getattr(self, "sends", 0) + 1
            if self.sends % 97 == 0:
                raise BufferError

        def resend(self, error, key, value, on_done):
            pass

    producer = Counting()
    send = burst_sender([producer], payloads, lambda now: key, lambda *_: ack, [0], TO_WALL)

    def round_of_bursts():
        for first in range(0, 100_000, 512):
            send(first, first + 512, 0, 1.0)
        gc.collect()

    round_of_bursts()  # warms every allocator and cache up
    counts = [sys.getrefcount(o) for o in (ack, key, *payloads)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        round_of_bursts()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 20_000, grown
    assert [sys.getrefcount(o) for o in (ack, key, *payloads)] == counts


class Plain:
    """A producer with ``send`` only, as before the seam."""

    def __init__(self):
        self.sent = []
        self.stored = []

    def send(self, key, payload, on_done, message_id, intended_ns):
        self.sent.append(message_id)
        on_done(None)

    def poll(self, timeout_s=0.0):
        pass


class Opted(Plain):
    """A producer that offers a direct call; records which way each message came."""

    def prefixed_send(self):
        return PrefixedSend(self.store, (VALUE, KEY))

    def store(self, value, key):
        self.stored.append(read_prefix(value)[1])


class Declines(Opted):
    def prefixed_send(self):
        return None


@pytest.mark.parametrize(
    ("second", "payloads", "direct"),
    [
        (Opted, [b"x" * 32], True),
        (Declines, [b"x" * 32], False),
        (Plain, [b"x" * 32], False),
        (Opted, [b"x" * 32, b"short"], False),
        (Opted, [bytearray(32)], False),
    ],
    ids=["all-opt-in", "one-declines", "one-lacks-it", "a-short-payload", "not-bytes"],
)
def test_the_compiled_loop_calls_directly_only_when_every_producer_opts_in(
    burst_engine, second, payloads, direct
):
    producers = [Opted(), second()]
    send_all(producers, 4, payloads=payloads)
    ids = [[0, 1], [1 << 40, (1 << 40) + 1]]
    direct = direct and burst_engine == "c"
    assert [(p.stored, p.sent) for p in producers] == [
        (mine, []) if direct else ([], mine) for mine in ids
    ]


def test_the_compiled_burst_is_off_with_loadgen_pure_python():
    code = "from loadgen.engine import burst; print(burst.COMPILED)"
    for env, compiled in [("1", False), ("0", BUILT), ("", BUILT)]:
        done = subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "LOADGEN_PURE_PYTHON": env},
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout.strip() == str(compiled)


def memory_loop(rate, seconds, payloads, max_in_flight=None):
    """A loop over two memory producers with one consumer: the deliveries and the recorder."""
    driver = MemoryDriver.from_config(DriverSpec(name="mem", kind="memory"))
    driver.create_topics([TopicSpec("t", 2)])
    received = []
    consumer = driver.create_consumer("t", "s", lambda *message: received.append(message))
    recorder = ProducerRecorder()
    producers = [driver.create_producer("t"), driver.create_producer("t")]
    loop = ProducerLoop(producers, payloads, None, rate, recorder, [0, 1 << 40], max_in_flight)
    loop.start()
    time.sleep(seconds)
    loop.stop()
    assert loop.error is None
    deadline = time.monotonic() + 5
    while len(received) < recorder.acked_count and time.monotonic() < deadline:
        time.sleep(0.01)
    consumer.close()
    return received, recorder


@pytest.mark.parametrize("max_in_flight", [None, 1])
def test_the_memory_driver_delivers_every_message_once_with_its_stamp(burst_engine, max_in_flight):
    payloads = [b"m" * 64, bytes(range(200))]
    before = time.time_ns()
    received, recorder = memory_loop(4000, 0.3, payloads, max_in_flight)
    sent = len(received)
    assert recorder.acked_count == sent > 800
    by_id = {message[2]: message for message in received}
    assert len(by_id) == sent
    expected = [((i % 2) << 40) + i // 2 for i in range(sent)]
    assert sorted(by_id) == sorted(expected)
    intended = [by_id[message_id][3] for message_id in expected]
    assert intended == sorted(intended)
    for index, message_id in enumerate(expected):
        payload, sent_ns, _, intended_ns, partition = by_id[message_id]
        assert before <= sent_ns <= time.time_ns() and partition in (0, 1)
        assert len(payload) == len(payloads[index % 2])
        assert payload[PREFIX_BYTES:] == payloads[index % 2][PREFIX_BYTES:]
        if burst_engine == "c":  # stamped in its prefix; the Python loop's send keeps it beside
            assert read_prefix(payload) == (sent_ns, message_id, intended_ns)
