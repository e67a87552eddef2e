"""The producers' own plumbing, with stand-ins for the client's write calls.

Without a Pravega server, these prove what loadgen's code does around the client (hand-off to
the write thread, one ``on_done`` per event, flush accounting, transaction boundaries), not what
the client or a server does. The stand-in write keeps the client's contract that matters for
the plumbing: it needs a running event loop on the calling thread, takes text, and completes
its future later from another thread through ``call_soon_threadsafe``, as pyo3-asyncio does.
"""

import asyncio
import threading
from functools import partial

import pytest

from loadgen_drivers.pravega.events import read_stamped, stamped
from loadgen_drivers.pravega.producer import EventProducer, WriteFailed, WriteLoop
from loadgen_drivers.pravega.transactions import (
    IDLE_COMMIT_S,
    TransactionalProducer,
    TransactionFailed,
    write_transaction,
)


class WriteAsync:
    """``write_event_async`` that completes from a thread of its own, failing chosen events."""

    def __init__(self, failing=()):
        self.failing = failing
        self.calls = []

    def __call__(self, event, routing_key=None):
        assert isinstance(event, str)
        loop = asyncio.get_running_loop()
        self.calls.append((event, routing_key))
        future = loop.create_future()
        if routing_key in self.failing:
            outcome = (future.set_exception, OSError("Error observed while writing an event"))
        else:
            outcome = (future.set_result, None)
        threading.Thread(target=loop.call_soon_threadsafe, args=outcome).start()
        return future


class Acks:
    def __init__(self):
        self.errors = []
        self.threads = set()
        self.done = threading.Event()
        self.expected = 0

    def __call__(self, error, *_):
        self.errors.append(error)
        self.threads.add(threading.current_thread().name)
        if len(self.errors) == self.expected:
            self.done.set()


@pytest.fixture
def write_loop():
    loop = WriteLoop()
    yield loop
    loop.close()


def test_every_send_is_written_once_and_acknowledged_from_the_write_thread(write_loop):
    write = WriteAsync()
    producer = EventProducer(write, write_loop, stamped)
    acks = Acks()
    acks.expected = 2000
    for i in range(acks.expected):
        producer.send(None if i % 2 else b"k", bytes([i % 256]) * 8, acks, i, 10_000 + i)
    assert acks.done.wait(5)
    assert producer.flush(1.0) == 0
    assert acks.errors == [None] * 2000
    assert acks.threads == {"pravega-writes"}
    assert len(write.calls) == 2000
    written = [(read_stamped(event.encode("utf-8")), key) for event, key in write.calls]
    by_id = {stamp[2]: (stamp[0], stamp[3]) for stamp, _ in written}
    assert [by_id[i] for i in range(2000)] == [
        (bytes([i % 256]) * 8, 10_000 + i) for i in range(2000)
    ]
    keyed = [stamp[2] for stamp, key in written if key == "k"]
    assert keyed == list(range(0, 2000, 2))  # one key's writes in the order sent


class HeldWrites:
    """``write_event_async`` whose futures complete only when the test says so."""

    def __init__(self):
        self.calls = []
        self.futures = []

    def __call__(self, event, routing_key=None):
        self.calls.append((read_stamped(event.encode("utf-8"))[2], routing_key))
        self.futures.append(asyncio.get_running_loop().create_future())
        return self.futures[-1]


def settle(write_loop, action=lambda: None):
    """Run ``action`` on the write thread and wait until the thread has run what it queued."""
    ran = threading.Event()

    def step():
        action()
        write_loop._loop.call_soon(ran.set)

    write_loop._loop.call_soon_threadsafe(step)
    assert ran.wait(5)


def test_a_keys_next_write_waits_for_its_previous_one_while_other_keys_go_on(write_loop):
    write = HeldWrites()
    producer = EventProducer(write, write_loop, stamped)
    acks = Acks()
    acks.expected = 6
    for message_id, key in enumerate([b"a", b"a", b"b", None, None, b"a"]):
        producer.send(key, b"x", acks, message_id, 0)
    settle(write_loop)
    assert write.calls == [(0, "a"), (2, "b"), (3, None), (4, None)]  # 1 and 5 wait for 0
    settle(write_loop, lambda: write.futures[0].set_result(None))
    assert write.calls[4:] == [(1, "a")]
    settle(write_loop, lambda: write.futures[4].set_exception(OSError("refused")))
    assert write.calls[5:] == [(5, "a")]  # a failed write releases its key too
    settle(write_loop, lambda: [f.set_result(None) for f in write.futures if not f.done()])
    assert acks.done.wait(5)
    assert sum(isinstance(error, WriteFailed) for error in acks.errors) == 1
    assert producer.flush(1.0) == 0


def test_a_failed_write_reaches_on_done_as_an_error(write_loop):
    producer = EventProducer(WriteAsync(failing=("bad",)), write_loop, stamped)
    acks = Acks()
    acks.expected = 2
    producer.send(b"ok", b"x", acks, 1, 1)
    producer.send(b"bad", b"x", acks, 2, 2)
    assert acks.done.wait(5)
    assert acks.errors[0] is None
    assert isinstance(acks.errors[1], WriteFailed)
    assert "OSError: Error observed while writing an event" in str(acks.errors[1])


class SimulatedPanic(BaseException):
    """Like ``pyo3_runtime.PanicException``: not an Exception."""


class TxnWriter:
    """``StreamTxnWriter``: records what each transaction got and whether it committed."""

    def __init__(self, fail_on=None, commit_fails=False):
        self.fail_on = fail_on
        self.commit_fails = commit_fails
        self.transactions = []

    def begin_txn(self):
        self.transactions.append(Txn(self.fail_on, self.commit_fails))
        return self.transactions[-1]


class Txn:
    def __init__(self, fail_on, commit_fails):
        self.fail_on = fail_on
        self.commit_fails = commit_fails
        self.events = []
        self.state = "open"

    def write_event(self, event, routing_key=None):
        if routing_key == self.fail_on:
            raise SimulatedPanic("Error observed while writing an event")
        self.events.append((event, routing_key))

    def commit(self):
        if self.commit_fails:
            raise SimulatedPanic("commit timed out")
        self.state = "committed"

    def abort(self):
        self.state = "aborted"


def test_a_transaction_commits_every_n_events_and_then_acknowledges_them():
    writer = TxnWriter()
    closed = []
    producer = TransactionalProducer(
        partial(write_transaction, writer), 3, stamped, lambda: closed.append(True)
    )
    acks = Acks()
    for i in range(7):
        producer.send(b"k", b"x", acks, i, 100 + i)
    assert [len(t.events) for t in writer.transactions] == [3, 3]
    assert [t.state for t in writer.transactions] == ["committed", "committed"]
    assert acks.errors == [None] * 6  # the 7th waits for its transaction
    first = producer.take_transactions()
    assert len(first.committed_ns) == 2 and all(ns > 0 for ns in first.committed_ns)
    assert (first.aborted_ns, first.withdrawn) == ((), ())
    producer.close()
    assert len(producer.take_transactions().committed_ns) == 1  # taken once each
    assert [t.state for t in writer.transactions] == ["committed"] * 3
    written = [read_stamped(e.encode("utf-8")) for t in writer.transactions for e, _ in t.events]
    assert [(message_id, intended) for _, _, message_id, intended in written] == [
        (i, 100 + i) for i in range(7)
    ]
    assert acks.errors == [None] * 7
    assert closed == [True]  # what made the transactions ends after the last commit


def test_an_idle_open_transaction_is_committed_by_poll(monkeypatch):
    writer = TxnWriter()
    producer = TransactionalProducer(partial(write_transaction, writer), 100, stamped)
    acks = Acks()
    producer.send(b"key", bytes(10), acks, -1, 2**63 - 1)  # the readiness probe: one event
    producer.poll()
    assert writer.transactions == []
    clock = [0.0]
    monkeypatch.setattr("loadgen_drivers.pravega.transactions.time.monotonic", lambda: clock[0])
    producer.send(b"key", bytes(10), acks, -1, 2**63 - 1)
    clock[0] += IDLE_COMMIT_S
    producer.poll()
    assert [(len(t.events), t.state) for t in writer.transactions] == [(2, "committed")]
    assert acks.errors == [None, None]


def test_a_panicking_write_fails_its_whole_transaction_and_aborts_it():
    writer = TxnWriter(fail_on="bad")
    producer = TransactionalProducer(partial(write_transaction, writer), 3, stamped)
    acks = Acks()
    producer.send(b"k", b"x", acks, 1, 1)
    producer.send(b"bad", b"x", acks, 2, 2)
    producer.send(b"k", b"x", acks, 3, 3)
    assert writer.transactions[0].state == "aborted"
    assert len(acks.errors) == 3
    assert all(isinstance(error, TransactionFailed) for error in acks.errors)
    assert "transaction write failed: SimulatedPanic" in str(acks.errors[0])
    producer.send(b"k", b"x", acks, 4, 4)
    producer.flush(1.0)  # the next event went into a transaction of its own
    assert [t.state for t in writer.transactions] == ["aborted", "committed"]
    assert acks.errors[3] is None


def test_a_failed_commit_fails_every_event_of_its_transaction():
    writer = TxnWriter(commit_fails=True)
    producer = TransactionalProducer(partial(write_transaction, writer), 2, stamped)
    acks = Acks()
    producer.send(b"k", b"x", acks, 1, 1)
    producer.send(b"k", b"x", acks, 2, 2)
    assert len(acks.errors) == 2
    assert all("transaction commit failed: SimulatedPanic" in str(e) for e in acks.errors)
    assert producer.take_transactions().committed_ns == ()


def test_send_waits_beyond_the_bound_until_an_acknowledgement_makes_room(write_loop, monkeypatch):
    monkeypatch.setattr("loadgen_drivers.pravega.producer.MAX_UNACKNOWLEDGED", 2)
    write = HeldWrites()
    producer = EventProducer(write, write_loop, stamped)
    acks = Acks()
    producer.send(None, b"x", acks, 0, 0)
    producer.send(None, b"x", acks, 1, 0)
    third = threading.Thread(target=producer.send, args=(None, b"x", acks, 2, 0))
    third.start()
    third.join(0.3)
    assert third.is_alive()  # two in flight: the third waits
    settle(write_loop)
    assert [message_id for message_id, _ in write.calls] == [0, 1]
    settle(write_loop, lambda: write.futures[0].set_result(None))
    third.join(5)
    assert not third.is_alive()
    settle(write_loop)
    assert [message_id for message_id, _ in write.calls] == [0, 1, 2]


def test_send_reports_an_event_failed_when_no_room_comes_in_time(write_loop, monkeypatch):
    monkeypatch.setattr("loadgen_drivers.pravega.producer.MAX_UNACKNOWLEDGED", 1)
    monkeypatch.setattr("loadgen_drivers.pravega.producer.FULL_WAIT_S", 0.2)
    write = HeldWrites()
    producer = EventProducer(write, write_loop, stamped)
    acks = Acks()
    producer.send(None, b"x", acks, 0, 0)
    producer.send(None, b"x", acks, 1, 0)
    assert len(acks.errors) == 1 and isinstance(acks.errors[0], WriteFailed)
    assert "no room" in str(acks.errors[0])
    settle(write_loop)
    assert [message_id for message_id, _ in write.calls] == [0]  # the failed one never written
    assert producer.sent - producer.completed == 1
