"""What the driver tests that call a driver directly (no runner) collect and wait for."""

from __future__ import annotations

import time
from collections.abc import Callable


class Inbox:
    """An ``on_message`` that keeps every delivery's arguments, in arrival order."""

    def __init__(self) -> None:
        self.stamps: list[tuple[bytes, int, int, int, int]] = []

    def __call__(
        self, payload: bytes, sent_ns: int, message_id: int, intended_ns: int, partition: int
    ) -> None:
        self.stamps.append((payload, sent_ns, message_id, intended_ns, partition))

    def __len__(self) -> int:
        return len(self.stamps)


def wait_for(condition: Callable[[], object], timeout_s: float = 10.0) -> bool:
    """True once ``condition()`` holds, False if it did not within ``timeout_s``: assert it."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
