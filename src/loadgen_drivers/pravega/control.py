"""Control-plane calls in a child process, so a silent controller costs a deadline, not the run.

The client holds the GIL while it blocks (see :mod:`.guard`), so a deadline cannot be kept
from inside the process that makes the call. Scope, stream and reader-group calls are made by a
child process instead: the parent sends one call at a time over a pipe and waits for the answer
in 0.1-s slices. Past the deadline, or on Ctrl-C, it kills the child and raises, and the next
call starts a fresh one (about 0.3 s on an idle machine, seconds on a loaded one). The deadline
starts once the child says it is ready: its start-up is the machine's time, not the
controller's, and must not eat into the controller's time to answer. The child ignores SIGINT
(a terminal sends it to the whole process group; the parent decides) and turns every exception,
a Rust panic included, into an answer. ``spawn``, not ``fork``: a fork would copy the lock
state of the client's runtime threads.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from loadgen.base.errors import BrokerUnreachable, DriverError
from loadgen_drivers.pravega.client import StreamManager, open_manager, scaling_policy
from loadgen_drivers.pravega.config import Scaling
from loadgen_drivers.pravega.guard import describe

CONTEXT = multiprocessing.get_context("spawn")
WAIT_SLICE_S = 0.1
"""How often the parent looks up from the pipe: Ctrl-C and a dead child are seen this fast."""
STOP_WAIT_S = 1.0
START_TIMEOUT_S = 60.0
"""A child not ready by then (an interpreter and the client's import) counts as failed."""
READY = "ready"

Operation = Callable[..., Any]
"""A module-level function ``(manager, *args) -> picklable value``, run in the child."""


def list_scopes(manager: StreamManager) -> list[str]:
    return manager.list_scope()


def create_scope(manager: StreamManager, scope: str) -> bool:
    """True if the scope was created, False if it was there already."""
    return manager.create_scope(scope)


def create_stream(manager: StreamManager, scope: str, stream: str, scaling: Scaling) -> bool:
    return manager.create_stream_with_policy(scope, stream, scaling_policy(scaling))


def seal_stream(manager: StreamManager, scope: str, stream: str) -> bool:
    return manager.seal_stream(scope, stream)


def delete_stream(manager: StreamManager, scope: str, stream: str) -> bool:
    return manager.delete_stream(scope, stream)


def create_reader_group(manager: StreamManager, scope: str, stream: str, group: str) -> None:
    """Creates the group's state (idempotent in the client: an initialised group is kept)."""
    manager.create_reader_group(group, scope, stream)


def delete_reader_group(manager: StreamManager, scope: str, group: str) -> None:
    manager.delete_reader_group(group, scope)


def stream_segments(manager: StreamManager, scope: str, stream: str, group: str) -> list[int]:
    """The stream's current segments (ids are ``epoch << 32 | number``), from the stream cut
    of a reader group made at the stream's tail for the purpose and deleted again."""
    at_tail = manager.create_reader_group(group, scope, stream, True)
    try:
        return list(at_tail.get_streamcut().get_segment_offset_map())
    finally:
        manager.delete_reader_group(group, scope)


def delete_scope(manager: StreamManager, scope: str) -> bool:
    return manager.delete_scope(scope)


def _serve(conn: Connection, controller_uri: str) -> None:
    """The child: answer ``(operation, args)`` requests with ``(ok, value or error text)``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn.send(READY)
    manager = None
    while True:
        try:
            request = conn.recv()
        except EOFError:  # the parent is gone
            return
        if request is None:
            return
        operation, args = request
        try:
            if manager is None:
                manager = open_manager(controller_uri)
            answer = (True, operation(manager, *args))
        except BaseException as error:  # a PanicException too: the parent reports it
            answer = (False, describe(error))
        conn.send(answer)


class ControlProcess:
    """The child process that makes control-plane calls for one controller URI."""

    def __init__(self, controller_uri: str) -> None:
        self.uri = controller_uri
        self._process: multiprocessing.process.BaseProcess | None = None
        self._conn: Connection | None = None

    def call(self, what: str, operation: Operation, *args: object, timeout_s: float) -> Any:
        """``operation(manager, *args)`` in the child, answered within ``timeout_s``.

        No answer in time: :class:`BrokerUnreachable`; an error or panic in the child:
        :class:`DriverError`; both name the controller URI and ``what`` was being done.
        """
        try:
            process, conn = self._started()
            deadline = time.monotonic() + timeout_s
            conn.send((operation, args))
            while not conn.poll(WAIT_SLICE_S):
                if time.monotonic() >= deadline:
                    raise BrokerUnreachable(
                        "pravega", self.uri, f"{what}: no answer within {timeout_s:g} s"
                    )
                if not process.is_alive():
                    break
            ok, value = conn.recv()
        except (EOFError, OSError):
            gone = self._process
            self.close()  # reaps it: its exit code is known after this
            raise DriverError(
                "pravega",
                f"{what} at {self.uri}: the control process exited"
                f" ({gone.exitcode if gone else None})",
            ) from None
        except BaseException:  # the deadline, or Ctrl-C: the child may be stuck in the client
            self._kill()
            raise
        if not ok:
            raise DriverError("pravega", f"{what} at {self.uri} failed: {value}")
        return value

    def _started(self) -> tuple[multiprocessing.process.BaseProcess, Connection]:
        if self._process is None or self._conn is None or not self._process.is_alive():
            self.close()
            parent, child = CONTEXT.Pipe()
            process = CONTEXT.Process(
                target=_serve, args=(child, self.uri), name="pravega-control", daemon=True
            )
            process.start()
            child.close()
            self._process, self._conn = process, parent
            self._await_ready(process, parent)
        return self._process, self._conn

    @staticmethod
    def _await_ready(process: multiprocessing.process.BaseProcess, conn: Connection) -> None:
        """Until the child's hello; EOFError if it died first or does not start in time."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while not conn.poll(WAIT_SLICE_S):
            if not process.is_alive() or time.monotonic() >= deadline:
                raise EOFError("the control process did not start")
        if conn.recv() != READY:
            raise EOFError("the control process did not say it was ready")

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
        self.close()

    def close(self) -> None:
        """Ask the child to end; kill it if it does not within a second."""
        process, conn = self._process, self._conn
        self._process = self._conn = None
        if conn is not None:
            with contextlib.suppress(OSError):  # the child may be gone already
                conn.send(None)
            conn.close()
        if process is not None:
            process.join(STOP_WAIT_S)
            if process.is_alive():
                process.kill()
                process.join(STOP_WAIT_S)
