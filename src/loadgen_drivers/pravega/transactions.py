"""Transactional producers: ``begin_txn``, ``write_event`` × N, ``commit``, made in a child process.

Every transaction call blocks with the GIL held (the client has no asynchronous transaction
API). Made in the run's own process, a commit would freeze the process's other Python threads,
and worse: a reader's slice completes on one of the client's runtime threads, which then waits
for the GIL, while the commit holds the GIL waiting for that runtime; the two stall each other
until the client's 30-s read timeout. So the events of a transaction are collected here and
written, in one batch, by a :class:`ControlProcess` of the producer's own, which begins, writes
and commits there within ``client.timeoutSeconds`` (a commit: plus :data:`LEASE_S`); this
process only waits on a pipe meanwhile, with the GIL released.

``send`` stamps the event and commits once the transaction holds ``eventsPerTransaction``
events; ``on_done`` runs when the transaction has committed (or failed), so publish latency is
send → commit. OMB completes each send at once instead: its publish latency is the
time inside ``sendAsync``, with the commit charged to every Nth event. With one event per
transaction (OMB's default) the two are the same. The events reach the server at the commit,
not one by one as they are sent; readers see none of them before the commit either way.

An open transaction is also committed by ``flush()``, and by ``poll()`` once no event has been
added to it for :data:`IDLE_COMMIT_S`, so that the readiness probe's single event and a run's
last events arrive. (OMB pads the probe's transaction with copies of the probe event; loadgen
would count those as received messages nobody sent.)
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from time import time_ns
from typing import Any

from loadgen.base.errors import DriverError, LoadgenError
from loadgen.driver_api import BlockingSends, OnDone, TransactionSample
from loadgen_drivers.pravega.events import routing_key
from loadgen_drivers.pravega.guard import describe, failure_of
from loadgen_drivers.pravega.producer import Encode

log = logging.getLogger("loadgen.pravega")

IDLE_COMMIT_S = 1.0
LEASE_S = 90.0
"""A transaction's lease: the client's fixed transaction timeout, renewed while its writer lives.
A commit is waited for this much past ``client.timeoutSeconds``: a commit cut off earlier may
still land (the controller had it, and finishes it once it answers again), and only the writer
that began a transaction can finish it (one from ``get_txn`` in another writer can neither
commit nor abort it), so killing the child would leave events reported failed that readers then
read. Past this, the outcome is reported as unknown."""

Event = tuple[str, str | None]
"""An encoded event and its routing key."""
Commit = Callable[[list[Event]], int]
"""Writes one transaction's events and commits them: how long the commit call took, in ns;
raises a LoadgenError if it did not commit."""

_writers: dict[int, Any] = {}
"""In the child: the ``StreamTxnWriter`` of each producer, by writer id."""


class TransactionFailed(DriverError):
    def __init__(self, step: str, error: BaseException) -> None:
        super().__init__("pravega", f"transaction {step} failed: {describe(error)}")


def write_transaction(writer: Any, events: list[Event]) -> int:
    """One transaction of ``events`` on ``writer``, committed; aborted if a write fails. The
    commit call's duration in ns: it returns once the controller has the transaction
    committed (through COMMITTING), not when it was asked to."""
    txn = writer.begin_txn()
    for event, key in events:
        if (error := failure_of(txn.write_event, event, key)) is not None:
            if (aborting := failure_of(txn.abort)) is not None:
                log.debug("aborting a failed transaction failed too: %s", describe(aborting))
            raise TransactionFailed("write", error)
    started_ns = time.perf_counter_ns()
    if (error := failure_of(txn.commit)) is not None:
        raise TransactionFailed("commit", error)
    return time.perf_counter_ns() - started_ns


def open_writer(manager: Any, scope: str, stream: str, writer_id: int) -> None:
    """In the child: makes the producer's transactional writer (once per child)."""
    if writer_id not in _writers:
        _writers[writer_id] = manager.create_transaction_writer(scope, stream, writer_id)


def commit_in_child(
    manager: Any, scope: str, stream: str, writer_id: int, events: list[Event]
) -> int:
    """In the child: :func:`write_transaction` on the producer's writer (made again if this is
    a fresh child, after a deadline killed the last one)."""
    open_writer(manager, scope, stream, writer_id)
    return write_transaction(_writers[writer_id], events)


class TransactionalProducer(BlockingSends):
    """Collects a transaction's events; an event is done when its transaction is. The send that
    fills a transaction waits for its commit (30-85 ms on Pravega 0.13). Each commit's duration
    goes to the result's ``transactionCommit`` histogram; a transaction that fails (a write,
    the commit, or no answer within ``client.timeoutSeconds`` + :data:`LEASE_S`) fails its
    events, which count as publish errors. Nothing is aborted on purpose."""

    def __init__(
        self,
        commit: Commit,
        events_per_transaction: int,
        encode: Encode,
        close: Callable[[], None] = lambda: None,
    ) -> None:
        """``close`` ends what ``commit`` uses (the child process), after the last commit."""
        self._commit_events = commit
        self._size = events_per_transaction
        self._encode = encode
        self._close = close
        self._events: list[Event] = []
        self._waiting: list[OnDone] = []
        self._last_write = 0.0
        self._committed_ns: list[int] = []
        self._taking = threading.Lock()
        """``take_transactions`` runs on the stats thread, commits on the producer's."""

    def send(
        self, key: bytes | None, payload: bytes, on_done: OnDone, message_id: int, intended_ns: int
    ) -> None:
        self._events.append(
            (self._encode(time_ns(), message_id, intended_ns, payload), routing_key(key))
        )
        self._waiting.append(on_done)
        self._last_write = time.monotonic()
        if len(self._waiting) >= self._size:
            self._commit()

    def _commit(self) -> None:
        events, waiting = self._events, self._waiting
        self._events, self._waiting = [], []
        try:
            commit_ns = self._commit_events(events)
        except LoadgenError as error:
            outcome: LoadgenError | None = error
        else:
            outcome = None
            with self._taking:
                self._committed_ns.append(commit_ns)
        for on_done in waiting:
            on_done(outcome)

    def take_transactions(self) -> TransactionSample:
        with self._taking:
            committed, self._committed_ns = self._committed_ns, []
        return TransactionSample(committed_ns=tuple(committed))

    def poll(self, timeout_s: float = 0.0) -> None:
        if self._waiting and time.monotonic() - self._last_write >= IDLE_COMMIT_S:
            self._commit()
        if timeout_s > 0:
            time.sleep(timeout_s)

    def flush(self, timeout_s: float) -> int:
        """Commits the open transaction (bounded as every commit is)."""
        if self._waiting:
            self._commit()
        return 0

    def close(self) -> None:
        self.flush(0.0)
        self._close()
