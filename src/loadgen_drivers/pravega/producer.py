"""Event producers: ``write_event_async`` on one event-loop thread per driver.

``StreamWriter.write_event_async`` is the client's only write that neither blocks nor holds the
GIL: it returns an asyncio future at once, and the Rust side completes it later through the
loop's ``call_soon_threadsafe``. It must be called on a thread whose event loop is running, and
the future's callbacks run on that thread, so every producer of a driver shares one
:class:`WriteLoop` thread: ``send`` stamps the time and appends to a deque (no syscall, no
thread per message), the loop thread issues the writes, and ``on_done`` runs from each future's
completion. The client still makes a future per event; that cost is its own.

``write_event_async`` does not keep the order of its calls: each call is a task that takes the
writer's lock, and tasks take it in the order the client's runtime runs them, so even one key's
writes can complete out of order (blocking writes keep it; bench/results/pravega.md "Pravega
producer path"). Pravega promises a routing key's events in the order written, so a keyed write
waits until the previous write of its key is acknowledged; writes of other keys go on meanwhile, and
events without a key (no order to keep) are never held.

The client bounds nothing it has not acknowledged, so ``send`` does: beyond
:data:`MAX_UNACKNOWLEDGED` events in flight it waits for acknowledgements, as a full queue
makes Kafka's and Pulsar's clients wait.

A writer can stop for good: when the segment store answers an append ``SegmentIsSealed`` and the
stream has no successor segment (a sealed stream, or the local Pravega's full store), the
client ends the writer, and the events it held fail with ``RecvError``. From then on 0.3.8's
``write_event_async`` completes every write at once as if it had been written, though nothing
reaches the server. So the first such failure stops the producer: every later completion is a
failure, and ``send`` raises :class:`WriterStopped`, which ends the run with its cause named.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from time import time_ns

from loadgen.base.errors import DriverError
from loadgen.driver_api import CallbackAcks, OnDone
from loadgen_drivers.pravega.events import routing_key
from loadgen_drivers.pravega.guard import describe

log = logging.getLogger("loadgen.pravega")

CLOSE_TIMEOUT_S = 5.0
STOP_TIMEOUT_S = 2.0
MAX_UNACKNOWLEDGED = 1_000
"""Events a producer may have sent and not had acknowledged; ``send`` waits beyond that, as
Kafka's and Pulsar's clients block on a full queue. The client has no bound of its own:
unthrottled, it queues events far faster than the server acknowledges them (gigabytes within
seconds), and a bounded window is acknowledged faster than an unbounded queue
(bench/results/pravega.md, "Pravega producer path")."""
FULL_WAIT_S = 30.0
"""How long ``send`` waits for room before it reports the event as failed (Kafka's too)."""
ROOM_CHECK_S = 0.1
Encode = Callable[[int, int, int, bytes], str]
"""``(send time ns, message id, intended ns, payload) -> event text``
(:func:`~loadgen_drivers.pravega.events.stamped`...)."""
WriteAsync = Callable[[str, str | None], asyncio.Future]
"""``StreamWriter.write_event_async(event, routing_key)``."""


STOPPED_SIGN = "RecvError"
"""In a failed write's error: the client dropped the event unanswered, which it does only when
the writer has ended."""


class WriteFailed(DriverError):
    def __init__(self, error: BaseException) -> None:
        super().__init__("pravega", f"write failed: {describe(error)}")


class WriterStopped(DriverError):
    """The client's writer ended (see the module's docstring): nothing more can be written."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(
            "pravega",
            f"the writer stopped, its events dropped unanswered ({describe(error)}): the segment "
            "store refused an append as sealed and the stream has no successor segment. Either "
            "the stream was sealed, or the store is full: the local Pravega holds at most "
            "--max-bytes of events (1 GiB by default) and frees nothing until streams are "
            "deleted (docs/drivers/pravega-local.md)",
        )


class WriteLoop:
    """A thread running a private event loop, on which queued writes are issued."""

    def __init__(self) -> None:
        self._queue: deque[tuple] = deque()
        self._scheduled = False
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="pravega-writes", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def submit(self, *write: object) -> None:
        """Queue ``(producer, sent_ns, message_id, intended_ns, key, payload, on_done)``;
        callable from any thread.

        The loop is woken only when no drain is pending, so a burst costs one wake-up.
        """
        self._queue.append(write)
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        self._scheduled = False  # before draining: a write queued from now on schedules anew
        queue = self._queue
        while queue:
            producer, sent_ns, message_id, intended_ns, key, payload, on_done = queue.popleft()
            producer.write(sent_ns, message_id, intended_ns, key, payload, on_done)

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(STOP_TIMEOUT_S)
        if not self._thread.is_alive():
            self._loop.close()


class EventProducer(CallbackAcks):
    """One ``StreamWriter``; ``send`` never blocks and ``on_done`` reports each event's fate
    (``completed`` is counted on the loop thread)."""

    def __init__(self, write_event_async: WriteAsync, loop: WriteLoop, encode: Encode) -> None:
        super().__init__()
        self._write_event_async = write_event_async
        self._submit = loop.submit
        self._encode = encode
        self._held: dict[str, deque[tuple]] = {}
        """Per routing key with a write in flight, the writes waiting for it, oldest first."""
        self._room = threading.Event()
        """Set by each acknowledgement while ``send`` waits for room."""
        self.stopped: WriterStopped | None = None
        """Set on the loop thread once the writer is known to have ended; never cleared."""

    def send(
        self, key: bytes | None, payload: bytes, on_done: OnDone, message_id: int, intended_ns: int
    ) -> None:
        if self.stopped is not None:
            raise self.stopped  # ends the producer loop, and so the run, with the cause
        self.sent += 1
        if self.sent - self.completed > MAX_UNACKNOWLEDGED and not self._room_made():
            self.sent -= 1  # never written; ``completed`` belongs to the loop thread
            on_done(self.stopped or WriteFailed(TimeoutError(f"no room for {FULL_WAIT_S:.0f} s")))
            return
        self._submit(self, time_ns(), message_id, intended_ns, key, payload, on_done)

    def _room_made(self) -> bool:
        """Waits until acknowledgements bring the events in flight down to the bound; False
        after :data:`FULL_WAIT_S` without, or once the writer stopped (no room will come)."""
        deadline = time.monotonic() + FULL_WAIT_S
        while self.sent - self.completed > MAX_UNACKNOWLEDGED:
            self._room.clear()
            if self.sent - self.completed <= MAX_UNACKNOWLEDGED:
                break
            if self.stopped is not None or time.monotonic() > deadline:
                return False
            self._room.wait(ROOM_CHECK_S)
        return True

    def write(
        self,
        sent_ns: int,
        message_id: int,
        intended_ns: int,
        key: bytes | None,
        payload: bytes,
        on_done: OnDone,
    ) -> None:
        """On the loop thread: issue the write, or hold it behind its key's write in flight."""
        text_key = routing_key(key)
        if text_key is not None:
            held = self._held.get(text_key)
            if held is not None:
                held.append((sent_ns, message_id, intended_ns, payload, on_done))
                return
            self._held[text_key] = deque()
        self._issue(text_key, sent_ns, message_id, intended_ns, payload, on_done)

    def _issue(
        self,
        text_key: str | None,
        sent_ns: int,
        message_id: int,
        intended_ns: int,
        payload: bytes,
        on_done: OnDone,
    ) -> None:
        """Issue the write and bind ``on_done`` to its completion; once the writer stopped, fail
        it unwritten (the client would report it written)."""
        if self.stopped is not None:
            self._written(on_done, text_key, self.stopped)
            return
        try:
            event = self._encode(sent_ns, message_id, intended_ns, payload)
            future = self._write_event_async(event, text_key)
        except BaseException as error:  # a panic too: it must not end the drain (and the loop)
            self._written(on_done, text_key, error)
            return
        future.add_done_callback(partial(self._completed, on_done, text_key))

    def _completed(self, on_done: OnDone, text_key: str | None, future: asyncio.Future) -> None:
        error = future.exception()
        if error is not None and self.stopped is None and STOPPED_SIGN in str(error):
            self.stopped = WriterStopped(error)
        self._written(on_done, text_key, error)

    def _written(self, on_done: OnDone, text_key: str | None, error: BaseException | None) -> None:
        """Report the write, then issue the next write its key held back. After the writer
        stopped, a write reported done is reported failed: the client says so of writes it
        never sent."""
        self.completed += 1
        if not self._room.is_set():
            self._room.set()
        if self.stopped is not None:
            on_done(self.stopped)
        else:
            on_done(None if error is None else WriteFailed(error))
        if text_key is None:
            return
        held = self._held[text_key]
        if held:
            self._issue(text_key, *held.popleft())
        else:
            del self._held[text_key]

    def close(self) -> None:
        pending = self.flush(CLOSE_TIMEOUT_S)
        if pending:
            log.warning("closing a writer with %d events still unacknowledged", pending)
