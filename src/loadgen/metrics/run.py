"""One run's interval and phase callbacks, also published on the run's metrics board."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from loadgen.scenarios.tailing import RunOptions


def _both(first: Callable[..., None], second: Callable[..., None] | None) -> Callable[..., None]:
    """A callback that calls ``first`` and then ``second`` (if any)."""
    if second is None:
        return first

    def call(*args: Any) -> None:
        first(*args)
        second(*args)

    return call


@contextlib.contextmanager
def publishing(options: RunOptions, **labels: str) -> Iterator[RunOptions]:
    """``options`` whose interval and phase callbacks also update ``options.metrics`` (if set),
    for one run labelled ``labels``; the board shows the run as ended when the block ends.

    The board is updated first, so the endpoint already shows an interval when the caller's own
    callback gets it."""
    board = options.metrics
    if board is None:
        yield options
        return
    board.start_run(**labels)
    try:
        yield replace(
            options,
            on_interval=_both(board.interval, options.on_interval),
            on_phase=_both(board.phase, options.on_phase),
        )
    finally:
        board.end_run()
