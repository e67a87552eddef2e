"""One asyncio event loop on a thread a driver owns, for clients that are asyncio only.

nats-py and rstream run every connection, publish, ack and read on an event loop. A driver
keeps one such loop on a thread of its own from its first connection to its ``close``; other
threads hand it work in two ways only: :meth:`LoopThread.run` (a coroutine, waited for, bounded:
set-up and admin calls) and :meth:`LoopThread.call` (a plain callback, not waited for: a
producer's batch of sends, one hop per batch, never one per message).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
STOP_TIMEOUT_S = 5.0


class LoopThread:
    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float) -> T:
        """Run ``coroutine`` on the loop and wait up to ``timeout_s`` for its result (its error
        is raised here; ``TimeoutError`` when it takes longer, and it is cancelled)."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result(timeout_s)
        except TimeoutError:
            future.cancel()
            raise

    def call(self, callback: Callable[..., object], *args: object) -> None:
        """Run ``callback(*args)`` on the loop soon; returns at once."""
        self.loop.call_soon_threadsafe(callback, *args)

    def stop(self) -> None:
        """Cancel what still runs on the loop, stop it and wait for the thread (bounded)."""
        if self.loop.is_closed():
            return
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self._cancel_and_stop)
            self._thread.join(STOP_TIMEOUT_S)
        if not self._thread.is_alive():
            self.loop.close()

    def _cancel_and_stop(self) -> None:
        for task in asyncio.all_tasks(self.loop):
            task.cancel()
        self.loop.call_soon(self.loop.stop)
