"""Timing a child process from something it did, not from its start.

A bound like "exits within 5 s" on ``subprocess.run`` also times the interpreter's start-up and
imports, and its shutdown, which on a loaded 2-core machine take seconds each (CPU work, not
waiting). The product's promise is about what happens after it begins to wait (a probe's budget,
a controller's timeout), so these helpers time between events the product itself makes: a line
it prints (:class:`Watch`), or its first request to a port (:class:`SilentPort`).
"""

from __future__ import annotations

import selectors
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

SELECT_SLICE_S = 0.05
"""How often the port's thread looks up to see whether it was closed."""


@dataclass(frozen=True)
class Watched:
    """A finished child process, with when each stderr line arrived (``time.monotonic``)."""

    returncode: int
    stdout: str
    stderr_lines: list[tuple[float, str]]

    @property
    def stderr(self) -> str:
        return "".join(line for _, line in self.stderr_lines)

    def said(self, prefix: str) -> float:
        """When the first stderr line starting with ``prefix`` arrived."""
        for arrived, line in self.stderr_lines:
            if line.startswith(prefix):
                return arrived
        raise AssertionError(f"no stderr line starts with {prefix!r}:\n{self.stderr}")


class Watch:
    """``command`` running, its stderr lines timed as they arrive (stderr is line-buffered in
    Python, so a line arrives when it is printed)."""

    def __init__(self, command: list[str], cwd: Path | None = None) -> None:
        self.child = subprocess.Popen(
            command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self._stdout: list[str] = []
        self._lines: list[tuple[float, str]] = []
        assert self.child.stdout is not None and self.child.stderr is not None
        self._readers = [
            threading.Thread(target=_read_all, args=(self.child.stdout, self._stdout)),
            threading.Thread(target=_stamp_lines, args=(self.child.stderr, self._lines)),
        ]
        for reader in self._readers:
            reader.daemon = True
            reader.start()

    def finish(self, timeout_s: float = 60) -> Watched:
        """Wait for the exit (killed after ``timeout_s``, failing the test)."""
        try:
            self.child.wait(timeout_s)
        finally:
            self.child.kill()
        for reader in self._readers:
            reader.join(timeout_s)
        return Watched(self.child.returncode, "".join(self._stdout), self._lines)


def run_watched(command: list[str], cwd: Path | None = None, timeout_s: float = 60) -> Watched:
    return Watch(command, cwd).finish(timeout_s)


def start_up_seconds() -> float:
    """A control for CPU-bound steps, measured in the same test: what ``loadgen --version``
    takes now, from the interpreter's start to its exit (~1 s on an idle machine, 3-5 s beside
    two CPU hogs). Work that waits for nothing (killing a child, writing a result) is bounded
    by it instead of by an idle machine's seconds."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "loadgen", "--version"], capture_output=True, check=True)
    return time.monotonic() - started


def _read_all(stream: IO[str], into: list[str]) -> None:
    into.append(stream.read())


def _stamp_lines(stream: IO[str], lines: list[tuple[float, str]]) -> None:
    for line in stream:
        lines.append((time.monotonic(), line))


class SilentPort:
    """A port on 127.0.0.1 that accepts connections, reads what comes and never answers; it
    notes when the first bytes arrive: the moment a client asked something and began to wait
    for the answer (a bare connect, to see whether the port is open, is not a request)."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self._listener.setblocking(False)
        self.port: int = self._listener.getsockname()[1]
        self.first_request: float | None = None
        """``time.monotonic()`` when the first bytes arrived."""
        self._requested = threading.Event()
        self._closed = threading.Event()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._thread = threading.Thread(target=self._serve, name="silent-port", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._closed.is_set():
            for key, _ in self._selector.select(SELECT_SLICE_S):
                if key.fileobj is self._listener:
                    connection, _ = self._listener.accept()
                    self._selector.register(connection, selectors.EVENT_READ)
                elif self._received(key.fileobj):
                    self.first_request = self.first_request or time.monotonic()
                    self._requested.set()

    def _received(self, connection: socket.socket) -> bool:
        """True if bytes came; a connection the client closed is dropped."""
        try:
            if connection.recv(65536):
                return True
        except OSError:
            pass
        self._selector.unregister(connection)
        connection.close()
        return False

    def wait_for_request(self, timeout_s: float) -> float:
        """When the first bytes arrived, waiting up to ``timeout_s`` for them."""
        if not self._requested.wait(timeout_s):
            raise AssertionError(f"no request came to port {self.port} within {timeout_s} s")
        assert self.first_request is not None
        return self.first_request

    def close(self) -> None:
        self._closed.set()
        self._thread.join()
        for key in list(self._selector.get_map().values()):
            key.fileobj.close()
        self._selector.close()

    def __enter__(self) -> SilentPort:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
