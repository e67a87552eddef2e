"""A reader per consumer, on a thread it owns that runs a private event loop.

``StreamReader.get_segment_slice_async`` returns an asyncio future bound to the calling thread's
running loop. The client completes it within about a second even when there is no data (an
empty slice), and the thread looks up every :data:`WAIT_S` while it is pending, so ``pause()``
takes effect within a tenth of a second. ``close()`` waits for a pending fetch (up to
:data:`SETTLE_S`) and drops its slice unread: a fetch left running holds the client's reader, and
going offline then waits behind it (30 s against the local Pravega).

A slice's events are delivered in order; a finished slice is dropped, which hands its segment
back to the reader. The hand-back happens only once the client's binding lets go of the slice:
it releases its own reference through pyo3's deferred reference pool, which is emptied on the
next call into the binding from Python. A process that only reads makes no such call while it
waits for its next slice, and its reader would stop for good after a few slices (the client
waits for a segment's slice to come back before it hands out that segment's next data); so while
waiting, the thread makes a no-op call (``to_str``) every :data:`WAIT_S`. ``release_segment``
would hand the slice back at once, but it blocks with the GIL held, and once it needs the
server (every few seconds, to update the group's state) the client's own threads wait for the
GIL meanwhile, which can stall a run for tens of seconds. A pause keeps the
current slice, mid-way if need be, and requests no new one until ``resume``. At ``close`` the
reader goes offline in its group (a blocking call, made only if the controller accepts a TCP
connection). Events not written by loadgen are skipped, counted and logged once. Each event
reaches ``on_message`` with the send time, message id and intended time of its prefix
(:mod:`.events`), or none of them without ``includeTimestampInEvent``, and partition -1.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any

from loadgen.driver_api import ForeignMessages, OnMessage
from loadgen_drivers.pravega.events import NO_PARTITION, read_stamped, read_unstamped
from loadgen_drivers.pravega.guard import describe

log = logging.getLogger("loadgen.pravega")

WAIT_S = 0.1
PAUSE_WAIT_S = 1.0
SETTLE_S = 2.0
"""At close, how long to wait for a slice being fetched: the client answers within about a
second."""
JOIN_TIMEOUT_S = 5.0


class ReaderConsumer:
    def __init__(
        self,
        reader: Any,
        on_message: OnMessage,
        stamped: bool,
        go_offline: Callable[[], None],
    ) -> None:
        """``go_offline`` marks the reader offline; called once the reading thread has ended."""
        self._reader = reader
        self._on_message = on_message
        self._read_event = read_stamped if stamped else read_unstamped
        self._go_offline = go_offline
        self._stop = False
        self._paused = False
        self._idle = threading.Event()
        self.foreign = ForeignMessages(log, "loadgen's event format")
        self.errors = 0
        self._thread = threading.Thread(target=self._run, name="pravega-reader", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._read())
        finally:
            loop.close()

    async def _read(self) -> None:
        pending: asyncio.Future | None = None
        current = None
        while not self._stop:
            if self._paused:
                self._idle.set()
                await asyncio.sleep(WAIT_S)
                continue
            if current is None:
                if pending is None:
                    pending = self._reader.get_segment_slice_async()
                await asyncio.wait((pending,), timeout=WAIT_S)
                if not pending.done():
                    self._reader.to_str()  # empties pyo3's pool: a dropped slice goes back
                    continue
                current, pending = self._slice(pending), None
                if current is None:  # the client failed: do not spin on it
                    await asyncio.sleep(WAIT_S)
                    continue
            if self._consume(current):
                current = None
        if pending is not None:
            await self._settle(pending)

    async def _settle(self, pending: asyncio.Future) -> None:
        """Waits for the slice still being fetched and drops it unread, so that no fetch holds
        the reader when it goes offline."""
        await asyncio.wait((pending,), timeout=SETTLE_S)
        if not pending.done():
            pending.cancel()

    def _slice(self, future: asyncio.Future) -> Any:
        try:
            return future.result()
        except Exception as error:
            self._on_error(error)
            return None

    def _consume(self, events: Any) -> bool:
        """Deliver the slice's events; False when a pause or close stopped it part-way."""
        read_event, on_message = self._read_event, self._on_message
        for event in events:
            try:
                payload, sent_ns, message_id, intended_ns = read_event(event.data())
            except ValueError:
                self.foreign()
            else:
                try:
                    on_message(payload, sent_ns, message_id, intended_ns, NO_PARTITION)
                except Exception as error:
                    self._on_error(error)
            if self._paused or self._stop:
                return False
        return True

    def _on_error(self, error: Exception) -> None:
        self.errors += 1
        if self.errors in (1, 10, 100, 1000):
            log.warning("reader error #%d: %s", self.errors, describe(error))

    def pause(self) -> None:
        """Returns once the reading thread holds still (or after a second, with a warning)."""
        self._idle.clear()
        self._paused = True
        if not self._idle.wait(PAUSE_WAIT_S):
            log.warning("the reader did not pause within %.0f s", PAUSE_WAIT_S)

    def resume(self) -> None:
        self._paused = False

    def close(self) -> None:
        self._stop = True
        self._thread.join(JOIN_TIMEOUT_S)
        if self._thread.is_alive():
            log.warning("a reader thread did not end within %.0f s", JOIN_TIMEOUT_S)
        self._go_offline()
