"""Local broker processes (on 127.0.0.1 unless told otherwise): ports, liveness, and a stop that
always reaps."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loadgen.base.errors import DriverError


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
    broker needs (test-broker quirks live here, never in driver defaults). ``helper_pids`` are
    processes the broker spawned that outlive it (RabbitMQ's epmd), stopped after it.
    """

    kind: str
    address: str
    pid: int
    log_path: str
    driver_config: dict[str, Any] = field(default_factory=dict)
    temporary_dir: str | None = None
    """A scratch folder made for the broker's data and logs; removed by :meth:`stop`."""
    helper_pids: list[int] = field(default_factory=list)
    driver_file: str | None = None
    """A ready driver YAML for this broker, where one was written (the secured endpoints')."""

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``timeout_s``; reaps the processes that are our children."""
        for pid in (self.pid, *self.helper_pids):
            stop_process(pid, timeout_s)
        if self.temporary_dir:
            shutil.rmtree(self.temporary_dir, ignore_errors=True)


def stop_process(pid: int, timeout_s: float) -> None:
    for sig, wait in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 2.0)):
        if _signal_and_wait(pid, sig, wait):
            return


def _signal_and_wait(pid: int, sig: signal.Signals, wait_s: float) -> bool:
    """Send ``sig``; True once the process is gone (reaped if it is our child)."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if _reaped(pid) or not process_alive(pid):
            return True
        time.sleep(0.05)
    return False


def _reaped(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return done == pid


def spawn_logged(command: Sequence[str], log_path: Path, *, detach: bool) -> subprocess.Popen:
    """Start ``command`` with its output appended to ``log_path``; ``detach`` starts it in a
    session of its own, so that it outlives this process (``loadgen brokers up``)."""
    with open(log_path, "ab") as log_file:
        return subprocess.Popen(
            list(command),
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=detach,
        )


def await_listening(
    name: str,
    broker: LocalBroker,
    process: subprocess.Popen,
    ports: Sequence[int],
    timeout_s: float,
    host: str = "127.0.0.1",
) -> None:
    """Returns once every port accepts. If the process exits first or ``timeout_s`` passes,
    stops the broker and raises :class:`DriverError` naming ``name``, with its log's end."""
    deadline = time.monotonic() + timeout_s
    while not all(port_open(port, host) for port in ports):
        if process.poll() is not None or time.monotonic() > deadline:
            tail = Path(broker.log_path).read_text(errors="replace")[-2000:]
            broker.stop()
            raise DriverError(broker.kind, f"{name} did not start on {broker.address}:\n{tail}")
        time.sleep(0.01)
