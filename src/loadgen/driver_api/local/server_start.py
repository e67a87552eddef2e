"""Waiting for an upstream server's JVM to serve, and saying in one line why it did not.

Apache Kafka, Pulsar and Pravega each start as a JVM whose readiness only the server can tell
(its metadata, its admin REST): the wait asks it, stops at once when the JVM exits, is bounded,
and an error names the server's last error line and its log.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from loadgen.base.errors import LocalBrokerError

POLL_S = 0.2
SHOWN_CHARS = 400


def last_error(paths: Sequence[Path], ignoring: Sequence[str] = ()) -> str:
    """The last ERROR or exception line of the first of ``paths`` that has one (a line holding
    any of ``ignoring`` is no error), else the last line of the first non-empty one."""
    last_lines: list[str] = []
    for path in paths:
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        last_lines += lines[-1:]
        for line in reversed(lines):
            if (" ERROR " in line or "Exception" in line) and not any(
                sign in line for sign in ignoring
            ):
                return line.strip()[:SHOWN_CHARS]
    return last_lines[0].strip()[:SHOWN_CHARS] if last_lines else "no log"


def await_serving(
    kind: str,
    server: str,
    process: subprocess.Popen,
    ready: Callable[[], bool],
    timeout_s: float,
    logs: Sequence[Path],
    *,
    waiting_for: str,
    ignoring: Sequence[str] = (),
) -> None:
    """Return once ``ready()``; raise :class:`LocalBrokerError` naming ``server``'s last error
    and its log (the first of ``logs``) when its JVM exits first, or ``waiting_for`` (what did
    not happen: ``serve its admin REST at URL``) when ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None:
            raise LocalBrokerError(
                kind,
                f"{server} exited at start (exit {code}): {last_error(logs, ignoring)} "
                f"(log {logs[0]})",
            )
        if ready():
            return
        time.sleep(POLL_S)
    raise LocalBrokerError(
        kind, f"{server} did not {waiting_for} within {timeout_s:.0f} s (log {logs[0]})"
    )
