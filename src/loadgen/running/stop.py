"""Ctrl-C and SIGTERM: the stop budget, and the record of what a signal cost.

A signal in any phase must end the run within 4 s, with what was measured written, on a loaded
2-core machine and with a broker that stopped answering. The waits after a signal (the producer
loop's end, the acknowledgements of messages in flight, closing clients and deleting topics)
each have a cap, and all of them draw on one deadline, :data:`STOP_BUDGET_S` after the signal:
however many waits a phase has, their sum stays within it. The rest of the four seconds is left
for building and writing the result and the process's exit, which a busy machine slows.

A second signal exits at once (130): the checkpoint of the last completed interval is on disk.
Once the result is written the process exits without the interpreter's finalizers.
The first is recorded (which signal, in which phase, and each wait's share) so the result can
say how long stopping took, measured inside the process, not by the machine's scheduling.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from loadgen.engine.listeners import RunListener
    from loadgen.engine.stats import IntervalStats

STOP_BUDGET_S = 2.5
"""The sum of every wait from the signal to the result being written (of the 4 s promised):
its parts below, one deadline for all of them."""
FLUSH_S = 1.0
"""Of the budget: the producer loop's end (it may be in a send a stalled broker holds) and the
acknowledgements of messages in flight (a stalled broker sends none)."""
TEARDOWN_S = 1.5
"""Of the budget: closing clients and deleting topics (a stalled broker holds both for tens of
seconds; the process's exit ends what is left)."""
SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass
class Stop:
    """The first signal: which, in which phase, when, and what each wait after it took."""

    signum: int
    phase: str
    at: float
    steps: dict[str, float] = field(default_factory=dict)

    def left(self, cap_s: float) -> float:
        """``cap_s``, or less when the budget's deadline comes sooner."""
        return max(0.0, min(cap_s, self.at + STOP_BUDGET_S - time.monotonic()))

    def to_json(self) -> dict[str, Any]:
        """``run.stop`` in the result: ``secondsToStop`` runs until the result is written."""
        return {
            "signal": signal.Signals(self.signum).name,
            "phase": self.phase,
            "secondsToStop": round(time.monotonic() - self.at, 3),
            "budgetSeconds": STOP_BUDGET_S,
            "steps": {name: round(seconds, 3) for name, seconds in self.steps.items()},
        }


class _Watch:
    """The process's one signal watch: the phase the run is in, and the first signal."""

    def __init__(self) -> None:
        self.phase = "start"
        self.stop: Stop | None = None

    def on_phase(self, phase: str, seconds: float | None) -> None:
        self.phase = phase

    def on_interval(self, stats: object, backlog: int) -> None:
        """Intervals are not the watch's business."""

    def handle(self, signum: int, frame: object) -> None:
        if self.stop is not None:
            os.write(2, b"second signal: exiting now; the last checkpoint is kept\n")
            os._exit(130)
        self.stop = Stop(signum, self.phase, time.monotonic())
        raise KeyboardInterrupt


@dataclass(frozen=True)
class UnlessStopped:
    """``listener``, deaf to intervals once a signal was received: a checkpoint built then
    would spend seconds of the stop budget on a busy machine on a file the result replaces."""

    listener: RunListener

    def on_phase(self, phase: str, seconds: float | None) -> None:
        self.listener.on_phase(phase, seconds)

    def on_interval(self, stats: IntervalStats, backlog: int) -> None:
        if WATCH.stop is None:
            self.listener.on_interval(stats, backlog)


WATCH = _Watch()
"""Told of each phase by the runner; its ``stop`` is set by the handler :func:`handling` sets."""


@contextlib.contextmanager
def handling() -> Iterator[None]:
    """Ctrl-C and SIGTERM both stop the run (KeyboardInterrupt) and are recorded; a second exits."""
    WATCH.stop = None
    previous = {signum: signal.signal(signum, WATCH.handle) for signum in SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def refuse_after_signal() -> None:
    """Raise KeyboardInterrupt if a signal came earlier: a signal during a run's teardown is
    not allowed to cost its result, so the run completes, and the next run must not start."""
    if WATCH.stop is not None:
        raise KeyboardInterrupt


def left(cap_s: float) -> float:
    """How long a wait after a signal may take: its cap, within what the budget has left."""
    return cap_s if WATCH.stop is None else WATCH.stop.left(cap_s)


@contextlib.contextmanager
def step(name: str) -> Iterator[None]:
    """Charge the block's time to ``name`` in the stop record (when a signal was received)."""
    started = time.monotonic()
    try:
        yield
    finally:
        charge(name, started)


def charge(name: str, since: float) -> None:
    """Charge the time since ``since`` (monotonic) to ``name`` (when a signal was received)."""
    if WATCH.stop is not None:
        steps = WATCH.stop.steps
        steps[name] = steps.get(name, 0.0) + time.monotonic() - since


def exit_at_once(code: int) -> None:
    """End the process now that the result is written: the interpreter's finalizers would close
    clients of a broker that may not answer (librdkafka's destroy waits for its threads)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    logging.shutdown()
    os._exit(code)
