"""An asyncio event loop driven in steps by whichever thread polls it.

The producers' pika connections live on this loop, and the loop runs only inside
``Producer.send``/``poll``/``flush``, on the producer loop's thread. So a publish is a direct
``basic_publish`` call, confirms are handled in the same thread that records them, and no second
Python thread competes for the GIL: the cost per message is that of a bare pika publisher.

A step relies on documented asyncio behaviour: ``stop()`` before ``run_forever()`` polls the
selector once with a zero timeout, runs the callbacks that became ready, and returns.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Callable
from time import monotonic, perf_counter_ns, sleep

MIN_STEP_GAP_NS = 100_000
"""Several producers polled back to back share one step: one selector poll serves them all."""
WAIT_SLICE_S = 0.05


class Pump:
    def __init__(self) -> None:
        # select() waits to the microsecond; epoll rounds a 0.4 ms wait up to 1 ms, which would
        # make every wait between two sends overshoot the next intended send time
        self.loop = asyncio.SelectorEventLoop(selectors.SelectSelector())
        self._last_step_ns = 0
        self._waiting = False
        self._woken = False

    def step(self) -> None:
        """Do the I/O that is ready and run its callbacks, without blocking."""
        if self.loop.is_running():  # another thread is stepping it (a send outlived its stop)
            return
        self._last_step_ns = perf_counter_ns()
        self.loop.stop()
        self.loop.run_forever()

    def step_unless_recent(self) -> None:
        if perf_counter_ns() - self._last_step_ns >= MIN_STEP_GAP_NS:
            self.step()

    def run_until(self, done: Callable[[], bool], timeout_s: float) -> bool:
        """Run the loop (blocking in the selector) until ``done()`` or ``timeout_s``.

        Callbacks that may make ``done()`` true call :meth:`wake`, so the wait ends at once.
        """
        deadline = monotonic() + timeout_s
        self.step()
        while not done():
            remaining = deadline - monotonic()
            if remaining <= 0:
                return False
            if self.loop.is_running():  # stepped by another thread: let it make the progress
                sleep(min(remaining, 0.01))
                continue
            self._waiting = True
            timer = self.loop.call_later(min(remaining, WAIT_SLICE_S), self.loop.stop)
            try:
                self.loop.run_forever()
            finally:
                self._waiting = False
                timer.cancel()
        return True

    def wait_for_callback(self, timeout_s: float) -> None:
        """Block until a callback calls :meth:`wake` (an ack arrived) or ``timeout_s`` passed."""
        self._woken = False
        self.run_until(lambda: self._woken, timeout_s)

    def wake(self) -> None:
        """Called by callbacks that made progress: ends a :meth:`run_until` wait to re-check."""
        self._woken = True
        if self._waiting:
            self.loop.stop()

    def close(self) -> None:
        if not self.loop.is_closed():
            self.loop.close()
