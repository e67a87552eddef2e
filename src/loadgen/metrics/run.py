"""One run's interval and phase callbacks, also published on the run's metrics board."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from loadgen.scenarios.tailing import RunOptions


def _both(first: Callable[..., None] | None, second: Callable[..., None]) -> Callable[..., None]:
    """A callback that calls ``first`` (if any) and then ``second``."""
    if first is None:
        return second

    def call(*args: Any) -> None:
        first(*args)
        second(*args)

    return call


@contextlib.contextmanager
def publishing(options: RunOptions, **labels: str) -> Iterator[RunOptions]:
    """``options`` whose interval and phase callbacks also update ``options.metrics`` (if set),
    for one run labelled ``labels``; the board shows the run as ended when the block ends."""
    board = options.metrics
    if board is None:
        yield options
        return
    board.start_run(**labels)
    try:
        yield replace(
            options,
            on_interval=_both(options.on_interval, board.interval),
            on_phase=_both(options.on_phase, board.phase),
        )
    finally:
        board.end_run()
