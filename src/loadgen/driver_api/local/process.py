"""Starting a local broker process (on 127.0.0.1 unless told otherwise), written once for all:
its port and folder (:func:`claim`), the process with its log (:func:`spawn_logged`), the wait
until it serves (:func:`wait_until`, :func:`await_listening`), and a stop that always reaps."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loadgen.base.errors import LocalBrokerError, LocalBrokerSetupError

LOG_TAIL_CHARS = 2000
"""How much of a broker's log a failed start shows."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex((host, port)) == 0


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """Exited, and waiting for its parent to collect it: a detached broker's parent is init,
    which may take seconds to. Gone for us; read from ``/proc`` (False where there is none)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat.rpartition(")")[2].split()
    return bool(fields) and fields[0] == "Z"


@dataclass(frozen=True)
class LocalBroker:
    """A broker process started locally (on 127.0.0.1 unless told otherwise).

    ``driver_config`` is the driver section that points at it, with whatever settings this
    broker needs (test-broker quirks live here, never in driver defaults); a secured broker's
    holds its password or token, so the printed form leaves it out. ``helper_pids`` are
    processes the broker spawned that outlive it (RabbitMQ's epmd), stopped after it and its
    ``node_pids``.
    """

    kind: str
    address: str
    pid: int
    log_path: str
    driver_config: dict[str, Any] = field(default_factory=dict, repr=False)
    temporary_dir: str | None = None
    """A scratch folder made for the broker's data and logs; removed by :meth:`stop`."""
    helper_pids: list[int] = field(default_factory=list)
    driver_file: str | None = None
    """A ready driver YAML for this broker, where one was written (the secured endpoints', the
    upstream servers')."""
    server: str = ""
    """What serves, where a kind has more than one: ``Apache Kafka 4.4.0`` (else the kind's
    usual local broker)."""
    node_addresses: list[str] = field(default_factory=list)
    """Every node's address, first the one in ``address``, where the broker is a cluster."""
    node_pids: list[int] = field(default_factory=list)
    """The other nodes' processes (the first is ``pid``), where the broker is a cluster."""
    endpoints: dict[str, str] = field(default_factory=dict)
    """What clients are pointed at, by what it is (``service URL``, ``admin URL``), where the
    address alone does not say it."""

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout_s``; reaps the processes that are our children.
        A cluster's nodes are signalled together (one at a time, the last ones would wait out
        a quorum the first ones took away), its helpers after them."""
        stop_processes([self.pid, *self.node_pids], timeout_s)
        for pid in self.helper_pids:
            stop_process(pid, timeout_s)
        if self.temporary_dir:
            shutil.rmtree(self.temporary_dir, ignore_errors=True)


def stop_process(pid: int, timeout_s: float) -> None:
    stop_processes([pid], timeout_s)


def stop_processes(pids: Sequence[int], timeout_s: float) -> None:
    """SIGTERM to each of ``pids``, then SIGKILL to those still there after ``timeout_s``."""
    left = list(pids)
    for sig, wait in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 2.0)):
        left = _signal_and_wait(left, sig, wait)
        if not left:
            return


def _signal_and_wait(pids: list[int], sig: signal.Signals, wait_s: float) -> list[int]:
    """Send ``sig`` to each; the ones still there after ``wait_s`` (a process is gone once
    reaped, if it is our child)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    deadline = time.monotonic() + wait_s
    left = pids
    while left and time.monotonic() < deadline:
        left = [pid for pid in left if not _reaped(pid) and process_alive(pid)]
        if left:
            time.sleep(0.05)
    return left


def _reaped(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return done == pid


def claim(
    kind: str, port: int | None, folder: Path | None, *, host: str = "127.0.0.1"
) -> tuple[int, Path, str | None]:
    """The broker's port (a free one unless given; a taken one is refused before anything
    starts) and its folder for data and logs: ``folder``, or a new temporary one, returned a
    second time to be removed by :meth:`LocalBroker.stop`."""
    chosen = port or free_port(host)
    if port_open(chosen, host):
        raise LocalBrokerSetupError(kind, f"port {host}:{chosen} is already in use")
    temporary = None if folder else tempfile.mkdtemp(prefix=f"loadgen-{kind}-")
    place = Path(folder or temporary)
    place.mkdir(parents=True, exist_ok=True)
    return chosen, place, temporary


def spawn_logged(
    command: Sequence[str],
    log_path: Path,
    *,
    detach: bool,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen:
    """Start ``command`` with its output appended to ``log_path``; ``detach`` starts it in a
    session of its own, so that it outlives this process (``loadgen brokers up``)."""
    with open(log_path, "ab") as log_file:
        return subprocess.Popen(
            list(command),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=None if env is None else dict(env),
            start_new_session=detach,
        )


def log_tail(log_path: str | Path) -> str:
    try:
        return Path(log_path).read_text(errors="replace")[-LOG_TAIL_CHARS:]
    except OSError:
        return ""


def wait_until(
    kind: str,
    ready: Callable[[], bool],
    *,
    alive: Callable[[], bool],
    timeout_s: float,
    failure: str,
    log_path: str | Path,
    poll_s: float = 0.05,
) -> None:
    """Return once ``ready()``; if the process stops being ``alive()`` or ``timeout_s`` pass
    first, raise :class:`LocalBrokerError` with ``failure`` and the end of its log."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        if not alive() or time.monotonic() > deadline:
            raise LocalBrokerError(kind, f"{failure}:\n{log_tail(log_path)}")
        time.sleep(poll_s)


def await_listening(
    name: str,
    broker: LocalBroker,
    process: subprocess.Popen,
    ports: Sequence[int],
    timeout_s: float,
    host: str = "127.0.0.1",
) -> None:
    """Return once every port accepts; otherwise stop the broker and raise
    :class:`LocalBrokerError` naming ``name``, with its log's end."""
    try:
        wait_until(
            broker.kind,
            lambda: all(port_open(port, host) for port in ports),
            alive=lambda: process.poll() is None,
            timeout_s=timeout_s,
            failure=f"{name} did not start on {broker.address}",
            log_path=broker.log_path,
            poll_s=0.01,
        )
    except LocalBrokerError:
        broker.stop()
        raise
