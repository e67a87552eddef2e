"""Calls into the real Pravega client that cannot hang a test: each runs on a thread with a
deadline, and a panic (a BaseException) comes back as :class:`ClientError`."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

CALL_TIMEOUT_S = 20.0


class ClientError(Exception):
    """What a client call raised, BaseExceptions (panics) included."""


def guarded(call: Callable[..., Any], *args: Any, timeout: float = CALL_TIMEOUT_S) -> Any:
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call(*args)
        except BaseException as error:  # the client panics with a BaseException
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        pytest.fail(f"{getattr(call, '__name__', call)}{args} did not return in {timeout} s")
    if "error" in outcome:
        error = outcome["error"]
        raise ClientError(f"{type(error).__name__}: {error}") from error
    return outcome.get("value")
