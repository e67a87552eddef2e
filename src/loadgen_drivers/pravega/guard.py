"""Failing fast and clearly in front of a client that blocks with the GIL held.

The ``pravega`` client retries a blocking call for about a minute before it raises, may never
return from one against a port that accepts and never answers, and fails some with
``pyo3_runtime.PanicException`` (a ``BaseException``). It holds the GIL all the while, so no
other Python thread runs: a deadline kept by another thread is frozen with it, and Ctrl-C is
seen only once the call returns (bench/results/pravega.md, "Pravega client: blocking calls
without a server"). Hence three guards:

* :func:`probe_tcp` before every entry point: a 1-s TCP connect to the controller, so a closed
  port is :class:`~loadgen.base.errors.BrokerUnreachable` in milliseconds, naming the URI;
* control-plane calls and transactions run in a child process with a deadline (:mod:`.control`,
  :mod:`.transactions`);
* calls that must run here, because they return the writer or reader objects, go through
  :func:`client_call` (or :func:`failure_of`), which turns a panic into an error naming the
  controller. They run only after the controller has answered a control call; their bound is
  the client's own (~61 s of retries, 120 s per write).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar
from urllib.parse import urlsplit

from loadgen.base.errors import BrokerUnreachable, DriverError
from loadgen.base.refusal import ACCEPTED, outcomes

T = TypeVar("T")

PROBE_TIMEOUT_S = 1.0
DETAIL_CHARS = 300
"""Rust errors print whole retry states; the first part says what happened."""


def controller_address(uri: str) -> tuple[str, int]:
    """``(host, port)`` of a URI that :class:`~loadgen_drivers.pravega.config.ClientConfig`
    accepted."""
    parts = urlsplit(uri)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def probe_tcp(uri: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Raise :class:`BrokerUnreachable` unless the controller's port accepts a connection
    within ``timeout_s``: stricter than :func:`~loadgen.driver_api.fail_if_refused`, which leaves
    a silent address to the client (this client cannot be trusted with one)."""
    [outcome] = outcomes([controller_address(uri)], timeout_s)
    if outcome != ACCEPTED:
        raise BrokerUnreachable("pravega", uri, f"no TCP connection to the controller: {outcome}")


def describe(error: BaseException) -> str:
    text = " ".join(str(error).split())
    if len(text) > DETAIL_CHARS:
        text = text[:DETAIL_CHARS] + "…"
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def failure_of(call: Callable[..., object], *args: object) -> BaseException | None:
    """What ``call(*args)`` raised (a panic too), or None; Ctrl-C and exit pass through."""
    try:
        call(*args)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # PanicException derives from BaseException
        return error
    return None


def client_call(uri: str, what: str, call: Callable[..., T], *args: object) -> T:
    """``call(*args)`` here; a client error or panic becomes a DriverError naming ``uri``."""
    try:
        return call(*args)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # PanicException derives from BaseException
        raise DriverError("pravega", f"{what} at {uri} failed: {describe(error)}") from None
