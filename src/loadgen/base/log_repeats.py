"""Collapse a client library's repeated log lines into one line and a count.

A client reconnecting to a dead broker logs the same failure every few milliseconds
(librdkafka: ~20 lines a second per client), which buries the run's own output. A line is a
repeat when it equals an earlier one with its numbers blanked out; within ``window_s`` of the
first, repeats are dropped and counted, and the next line let through says how many were.
"""

from __future__ import annotations

import logging
import re
import time

NUMBERS = re.compile(r"\d+")
WINDOW_S = 10.0
MAX_KEYS = 1000
"""Distinct lines remembered; past that the memory starts over (a line may show once more)."""


class RepeatFilter(logging.Filter):
    def __init__(self, window_s: float = WINDOW_S) -> None:
        super().__init__()
        self.window_s = window_s
        self._first_seen: dict[tuple[int, str], float] = {}
        self._dropped: dict[tuple[int, str], int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.levelno, NUMBERS.sub("#", record.getMessage()))
        now = time.monotonic()
        first = self._first_seen.get(key)
        if first is not None and now - first < self.window_s:
            self._dropped[key] = self._dropped.get(key, 0) + 1
            return False
        if len(self._first_seen) >= MAX_KEYS:
            self._first_seen.clear()
        self._first_seen[key] = now
        dropped = self._dropped.pop(key, 0)
        if dropped:
            record.msg = f"{record.getMessage()} ({dropped} similar lines in the last "
            record.msg += f"{self.window_s:.0f} s not shown)"
            record.args = None
        return True
