"""Transactional production, as kafka-producer-perf-test offers it (``--transactional-id``,
``--transaction-duration-ms``), and pulsar-perf's messages per transaction.

* ``transactional.id`` in ``producerConfig`` turns transactions on. Each producer's id is that
  value followed by ``-<topic>-<host>-<pid>-<n>``: two producers alive with one id fence each
  other (the broker aborts the older one's transaction), and a run's producers live at once,
  on one or many hosts.
* A transaction begins with the first message after the previous one ended, and is committed
  once it is ``transactionDurationMs`` old (checked at every send and poll; 3000 ms unless
  given, as in the Java tool) or holds ``messagesPerTransaction`` messages; ``flush`` commits
  what is open. A readiness probe's transaction is committed at once.
* A message is acknowledged when its transaction commits: ``on_done`` runs after the commit
  call returned, so publish latency runs from the send to the commit (the Java tool times each
  send's callback, before the commit). Commit and abort calls are timed one by one
  (:class:`loadgen.driver_api.TransactionSample`).
* ``transactionAbortRatio`` of the transactions, evenly spread (the k-th is aborted when
  ``floor(k * ratio)`` steps up), are aborted on purpose after their messages reached the
  broker (flushed first, so a ``read_uncommitted`` consumer would see them): their messages are
  withdrawn, never acknowledged.
* A transaction that fails (a delivery error, a failed commit) is aborted, and each of its
  messages reports the error. A fatal error (the producer fenced by another with its id) ends
  the run.
* The producer loop calls ``send`` for every message (no stamped direct call): the messages of
  the open transaction are kept until it ends.
"""

from __future__ import annotations

import math
import os
import socket
import threading
import time
from collections.abc import Callable
from time import perf_counter_ns

from confluent_kafka import KafkaError, KafkaException, Producer

from loadgen.base.errors import DriverError
from loadgen.driver_api import NO_MESSAGE_ID, OnDone, TransactionSample
from loadgen_drivers.kafka.config import KafkaConfig

DEFAULT_DURATION_MS = 3000
"""kafka-producer-perf-test's transaction duration when a transactional id is set."""
CALL_TIMEOUT_S = 30.0
"""The longest wait for one transaction call (init, commit, abort)."""
CALL_SLICE_S = 0.5
"""librdkafka's blocking calls do not return to Python for a signal: a call is retried in
waits this long (a timed-out transaction call is retriable and resumes where it was)."""


def transactional_ids(prefix: str, topic: str) -> Callable[[], str]:
    """Ids unique to this process's producers on ``topic``, numbered from 0."""
    made = 0
    host, pid = socket.gethostname(), os.getpid()

    def next_id() -> str:
        nonlocal made
        made += 1
        return f"{prefix}-{topic}-{host}-{pid}-{made - 1}"

    return next_id


def _sliced(call: Callable[[float], None]) -> None:
    """``call(timeout)`` in slices until it succeeds, ``CALL_TIMEOUT_S`` passes, or it fails
    for good (raised)."""
    deadline = time.monotonic() + CALL_TIMEOUT_S
    while True:
        try:
            call(CALL_SLICE_S)
            return
        except KafkaException as error:
            failure: KafkaError = error.args[0]
            if not failure.retriable() or time.monotonic() >= deadline:
                raise
            if failure.code() != KafkaError._TIMED_OUT:
                time.sleep(CALL_SLICE_S / 5)  # e.g. a coordinator still loading: ask again soon


class AbortPlan:
    """Which transactions to abort on purpose: the k-th (from 1) when ``floor(k * ratio)``
    steps up, so ``ratio`` of them, evenly spread."""

    def __init__(self, ratio: float) -> None:
        self._ratio = ratio
        self._count = 0

    def next_aborts(self) -> bool:
        self._count += 1
        k, ratio = self._count, self._ratio
        return math.floor(k * ratio) > math.floor((k - 1) * ratio)


class Transactions:
    """The transaction state of one producer: what the open transaction holds, and what the
    ended ones measured."""

    def __init__(self, client: Producer, config: KafkaConfig) -> None:
        self._client = client
        duration_ms = config.transaction_duration_ms or DEFAULT_DURATION_MS
        self._duration_ns = duration_ms * 1_000_000
        self._limit = config.messages_per_transaction or 0
        self._abort_plan = AbortPlan(config.transaction_abort_ratio)
        self._opened_ns = 0
        self._open = False
        self._done: list[OnDone] = []
        self._ids: list[int] = []
        self._failure: KafkaError | BaseException | None = None
        self._lock = threading.Lock()
        self._committed: list[int] = []
        self._aborted: list[int] = []
        self._withdrawn: list[int] = []

    def start(self) -> None:
        """Register the producer's transactional id with the broker (fencing an older producer
        with the same id and aborting what it left open)."""
        try:
            _sliced(self._client.init_transactions)
        except KafkaException as error:
            raise DriverError("kafka", f"initialising transactions failed: {error}") from None

    def joined(self, on_done: OnDone, message_id: int) -> None:
        """A message about to be sent: it joins the open transaction (one begins if none is)."""
        if not self._open:
            self._client.begin_transaction()
            self._open, self._opened_ns, self._failure = True, perf_counter_ns(), None
        self._done.append(on_done)
        self._ids.append(message_id)

    def delivered(self, error: KafkaError | BaseException | None, *_: object) -> None:
        """The client's delivery report of one message (its ``on_delivery``)."""
        if error is not None and self._failure is None:
            self._failure = error

    def due(self, message_id: int = 0) -> bool:
        """Whether the open transaction should end now."""
        if not self._open:
            return False
        return (
            message_id == NO_MESSAGE_ID
            or (self._limit and len(self._ids) >= self._limit)
            or perf_counter_ns() - self._opened_ns >= self._duration_ns
        )

    def end(self) -> int:
        """Commit the open transaction, or abort it (planned or failed); how many of its
        messages were not acknowledged."""
        if not self._open:
            return 0
        done, ids = self._done, self._ids
        self._done, self._ids, self._open = [], [], False
        planned_abort = self._abort_plan.next_aborts()
        if self._failure is None and not planned_abort:
            started = perf_counter_ns()
            try:
                _sliced(self._client.commit_transaction)
            except KafkaException as error:
                self._failure = self._fatal_or(error)
            else:
                self._note(self._committed, perf_counter_ns() - started)
                for on_done in done:
                    on_done(None)
                return 0
        elif self._failure is None:
            self._client.flush(CALL_TIMEOUT_S)  # the messages reach the log before the abort
        started = perf_counter_ns()
        try:
            _sliced(self._client.abort_transaction)
        except KafkaException as error:
            raise DriverError("kafka", f"aborting a transaction failed: {error}") from None
        self._note(self._aborted, perf_counter_ns() - started)
        if self._failure is None:
            with self._lock:
                self._withdrawn.extend(ids)
        else:
            for on_done in done:
                on_done(self._failure)
        return len(done)

    @staticmethod
    def _fatal_or(error: KafkaException) -> KafkaError:
        """A commit that failed: the failure, unless the producer cannot go on (fenced)."""
        failure: KafkaError = error.args[0]
        if failure.fatal() or not failure.txn_requires_abort():
            raise DriverError("kafka", f"committing a transaction failed: {failure}") from None
        return failure

    def _note(self, into: list[int], elapsed_ns: int) -> None:
        with self._lock:
            into.append(elapsed_ns)

    def take(self) -> TransactionSample:
        with self._lock:
            sample = TransactionSample(
                tuple(self._committed), tuple(self._aborted), tuple(self._withdrawn)
            )
            self._committed, self._aborted, self._withdrawn = [], [], []
        return sample
