"""Transactional producers: ``begin_txn``, ``write_event`` × N, ``commit``, as OMB does.

Every transaction call blocks with the GIL held (the client has no asynchronous transaction
API), so a thread of our own would not stop them from stalling the process; like OMB's
transactional producer, ``send`` writes the event itself and commits once the transaction holds
``eventsPerTransaction`` events. ``on_done`` runs when the event's transaction has committed
(or failed), so publish latency is send → commit. OMB completes each send at once instead: its
publish latency is the time inside ``sendAsync``, with the commit charged to every Nth event.
With one event per transaction (OMB's default) the two are the same.

An open transaction is also committed by ``flush()``, and by ``poll()`` once no event has been
added to it for :data:`IDLE_COMMIT_S`, so that the readiness probe's single event and a run's
last events arrive. (OMB pads the probe's transaction with copies of the probe event; loadgen
would count those as received messages nobody sent.)
"""

from __future__ import annotations

import logging
import time
from time import time_ns
from typing import Any

from drivers.pravega.events import routing_key
from drivers.pravega.guard import describe, failure_of
from drivers.pravega.producer import Encode
from loadgen.driver import OnDone
from loadgen.errors import DriverError

log = logging.getLogger("loadgen.pravega")

IDLE_COMMIT_S = 1.0


class TransactionFailed(DriverError):
    def __init__(self, step: str, error: BaseException) -> None:
        super().__init__("pravega", f"transaction {step} failed: {describe(error)}")


class TransactionalProducer:
    """One ``StreamTxnWriter``; an event is done when its transaction is."""

    def __init__(self, writer: Any, events_per_transaction: int, encode: Encode) -> None:
        self._writer = writer
        self._size = events_per_transaction
        self._encode = encode
        self._txn: Any = None
        self._waiting: list[OnDone] = []
        self._last_write = 0.0

    def send(
        self, key: bytes | None, payload: bytes, on_done: OnDone, message_id: int, intended_ns: int
    ) -> None:
        self._waiting.append(on_done)
        event = self._encode(time_ns(), message_id, intended_ns, payload)
        error = failure_of(self._write, event, routing_key(key))
        if error is not None:
            self._abort(TransactionFailed("write", error))
            return
        self._last_write = time.monotonic()
        if len(self._waiting) >= self._size:
            self._commit()

    def _write(self, event: str, key: str | None) -> None:
        if self._txn is None:
            self._txn = self._writer.begin_txn()
        self._txn.write_event(event, key)

    def _take(self) -> tuple[Any, list[OnDone]]:
        taken = self._txn, self._waiting
        self._txn, self._waiting = None, []
        return taken

    def _commit(self) -> None:
        txn, waiting = self._take()
        error = failure_of(txn.commit)
        outcome = None if error is None else TransactionFailed("commit", error)
        for on_done in waiting:
            on_done(outcome)

    def _abort(self, failure: TransactionFailed) -> None:
        txn, waiting = self._take()
        if txn is not None and (error := failure_of(txn.abort)) is not None:
            log.debug("aborting a failed transaction failed too: %s", describe(error))
        for on_done in waiting:
            on_done(failure)

    def poll(self, timeout_s: float = 0.0) -> None:
        if self._waiting and time.monotonic() - self._last_write >= IDLE_COMMIT_S:
            self._commit()
        if timeout_s > 0:
            time.sleep(timeout_s)

    def flush(self, timeout_s: float) -> int:
        """Commits the open transaction (bounded by the client's own 120-s commit timeout)."""
        if self._waiting:
            self._commit()
        return 0

    def close(self) -> None:
        self.flush(0.0)
