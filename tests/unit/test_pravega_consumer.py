"""The reader thread's own plumbing, with a stand-in for the client's reader.

Without a Pravega server, these prove what loadgen's code does around the client (delivery in
order with the send time, skipping foreign events, pause and close within their bounds), not
what the client or a server does. The stand-in keeps the client's contract that matters here:
``get_segment_slice_async`` needs a running loop on the calling thread, its future is completed
later from another thread (unless it was cancelled, as pyo3-asyncio checks), and with no data
the client answers with an empty slice after 1 s.
"""

import asyncio
import threading
import time
import weakref
from collections import deque
from types import SimpleNamespace

import pytest

from loadgen.driver_api import NO_MESSAGE_ID, NO_SEND_TIME_NS
from loadgen_drivers.pravega.consumer import ReaderConsumer
from loadgen_drivers.pravega.events import stamped, unstamped


def event(sent_ns, payload=b"payload"):
    """An event stamped with ``sent_ns``, message id ``sent_ns + 1000`` and intended time
    ``sent_ns - 5``."""
    wire = stamped(sent_ns, sent_ns + 1000, sent_ns - 5, payload).encode("utf-8")
    return SimpleNamespace(data=lambda: wire)


class Slice:
    """A slice of events, its own iterator as the client's (a paused read goes on where it
    stopped); weakly referenced by the stand-in, to see when the consumer drops it."""

    def __init__(self, events):
        self.events = iter(events)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self.events)


class Reader:
    """Hands out the given slices, then empty ones after the client's 1-s wait for data; keeps
    a weak reference to each slice it handed out and counts calls of ``to_str``."""

    def __init__(self, *slices):
        self.slices = deque(slices)
        self.handed = []
        self.calls = 0

    def get_segment_slice_async(self):
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        events = self.slices.popleft() if self.slices else []
        handed = Slice(events)
        self.handed.append(weakref.ref(handed))
        answer = threading.Timer(0.0 if events else 1.0, complete, (loop, future, handed))
        answer.daemon = True
        answer.start()
        return future

    def to_str(self):
        self.calls += 1
        return "Reader"

    def dropped(self, index):
        return self.handed[index]() is None


def complete(loop, future, events):
    if not future.cancelled():
        loop.call_soon_threadsafe(future.set_result, events)


class Received:
    def __init__(self, expected, seconds_each=0.0):
        self.messages = []
        self.stamps = []
        self.expected = expected
        self.seconds_each = seconds_each
        self.all_in = threading.Event()

    def __call__(self, payload, sent_ns, message_id, intended_ns, partition):
        time.sleep(self.seconds_each)
        self.messages.append((payload, sent_ns))
        self.stamps.append((message_id, intended_ns, partition))
        if len(self.messages) >= self.expected:
            self.all_in.set()


@pytest.fixture
def consumers():
    opened = []

    def make(reader, received, go_offline=lambda: None, stamped=True):
        opened.append(ReaderConsumer(reader, received, stamped, go_offline))
        return opened[-1]

    yield make
    for each in opened:
        each.close()


def test_events_arrive_in_order_with_their_send_time_id_and_intended_time(consumers):
    foreign = SimpleNamespace(data=lambda: b"\xff not ours")
    received = Received(expected=5)
    reader = Reader([event(1), event(2), foreign], [event(3), event(4), event(5)])
    consumer = consumers(reader, received)
    assert received.all_in.wait(5)
    assert [sent for _, sent in received.messages] == [1, 2, 3, 4, 5]
    assert {payload for payload, _ in received.messages} == {b"payload"}
    assert received.stamps == [(n + 1000, n - 5, -1) for n in range(1, 6)]  # no segment: -1
    assert consumer.foreign.count == 1
    wait_until(lambda: reader.dropped(0) and reader.dropped(1))  # finished: handed back
    assert consumer.errors == 0


def wait_until(condition, timeout=5):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.01)


def test_without_the_stamp_events_arrive_with_no_send_time_id_or_intended_time(consumers):
    wire = unstamped(0, 7, 8, b"plain").encode("utf-8")
    received = Received(expected=1)
    consumers(Reader([SimpleNamespace(data=lambda: wire)]), received, stamped=False)
    assert received.all_in.wait(5)
    assert received.messages == [(b"plain", NO_SEND_TIME_NS)]
    assert received.stamps == [(NO_MESSAGE_ID, NO_SEND_TIME_NS, -1)]


def test_a_pause_holds_a_slice_mid_way_and_resume_goes_on_from_there(consumers):
    received = Received(expected=200, seconds_each=0.002)
    reader = Reader([event(n) for n in range(200)])
    consumer = consumers(reader, received)
    while len(received.messages) < 10:
        time.sleep(0.001)
    consumer.pause()
    held = len(received.messages)
    time.sleep(0.3)
    assert len(received.messages) == held < 200
    assert not reader.dropped(0)  # the slice is still being read
    consumer.resume()
    assert received.all_in.wait(5)
    assert [sent for _, sent in received.messages] == list(range(200))
    wait_until(lambda: reader.dropped(0))


def test_close_waits_for_the_slice_being_fetched_drops_it_unread_then_goes_offline():
    """A fetch left running would hold the client's reader: going offline then waited 30 s
    behind it against the local Pravega."""
    offline = threading.Event()
    received = Received(expected=1)
    reader = Reader()
    consumer = ReaderConsumer(reader, received, True, offline.set)
    time.sleep(0.2)  # waiting for a slice: the stand-in answers only after 1 s
    started = time.monotonic()
    consumer.close()
    assert time.monotonic() - started < 1.5  # the fetch's remaining ~0.8 s, not more
    assert len(reader.handed) == 1 and reader.dropped(0)
    assert received.messages == []
    assert offline.is_set()


def test_while_waiting_for_a_slice_the_consumer_calls_into_the_client_every_wait(consumers):
    """The binding lets go of a dropped slice only on a later call into it from Python."""
    reader = Reader()
    consumers(reader, Received(expected=1))
    time.sleep(0.55)  # the stand-in's first (empty) slice comes after 1 s
    assert 3 <= reader.calls <= 6


def test_close_gives_up_on_a_fetch_that_outlasts_the_settle_time(monkeypatch):
    monkeypatch.setattr("loadgen_drivers.pravega.consumer.SETTLE_S", 0.1)
    offline = threading.Event()
    reader = Reader()
    consumer = ReaderConsumer(reader, Received(expected=1), True, offline.set)
    time.sleep(0.2)
    started = time.monotonic()
    consumer.close()
    assert time.monotonic() - started < 0.4
    assert offline.is_set()
