"""Worker processes on the coordinator's host for ``loadgen run --processes N``.

Each is a ``loadgen worker`` on a free loopback port with a token made for this run; it gets its
own session (a Ctrl-C at the terminal reaches the coordinator only, which then stops the run
in order and keeps the partial result) and exits when its stdin closes, so no worker outlives
its coordinator, however that one ends.
"""

from __future__ import annotations

import contextlib
import logging
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from loadgen.base.errors import WorkerError
from loadgen.engine.recorder import PURE_PYTHON_ENV

log = logging.getLogger("loadgen.distributed")

TOKEN_ENV = "LOADGEN_TOKEN"
START_TIMEOUT_S = 30.0
"""Importing loadgen and the drivers takes 1-2 s per process; on a busy host much more."""
STOP_TIMEOUT_S = 10.0
ANNOUNCEMENT = "loadgen worker listening on "


def _verbosity() -> list[str]:
    level = logging.getLogger().getEffectiveLevel()
    return ["-vv"] if level <= logging.DEBUG else ["-v"] if level <= logging.INFO else []


def announced_url(process: subprocess.Popen, deadline: float, name: str) -> str:
    """The URL the worker prints once it listens."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while (remaining := deadline - time.monotonic()) > 0:
            if selector.select(remaining):
                line = process.stdout.readline()
                if line.startswith(ANNOUNCEMENT):
                    return line[len(ANNOUNCEMENT) :].strip()
                if not line:
                    break
    code = process.poll()
    detail = (
        f"exited with code {code} before listening (its errors are above)"
        if code is not None
        else f"did not listen within {START_TIMEOUT_S:.0f} s"
    )
    raise WorkerError(name, detail, exit_code=1)


def worker_environment(
    parent: Mapping[str, str], token: str | None, extra_env: Mapping[str, str]
) -> dict[str, str]:
    """A started worker's environment: the parent's without its ``LOADGEN_<OPTION>`` settings,
    which are the coordinator's (``LOADGEN_METRICS_PORT``: every worker would try that port),
    but with the engine choice (``LOADGEN_PURE_PYTHON``), which is the process's own."""
    env = {
        key: value
        for key, value in parent.items()
        if not key.startswith("LOADGEN_") or key == PURE_PYTHON_ENV
    }
    env |= extra_env
    if token:
        env[TOKEN_ENV] = token
    return env


def start_worker_process(
    token: str | None,
    cpu: int | None = None,
    *,
    bind: str = "127.0.0.1:0",
    wrapper: Sequence[str] = (),
    extra_env: Mapping[str, str] | None = None,
) -> subprocess.Popen:
    """``loadgen worker`` on ``bind`` (a free loopback port by default; pinned to ``cpu`` if
    given), ended by closing its stdin; read its URL with :func:`announced_url`. ``wrapper`` is
    a command that runs it (``ip netns exec NS`` puts it on a simulated host); ``extra_env`` is
    added to its environment (a skewed clock in tests and benchmarks)."""
    env = worker_environment(os.environ, token, extra_env or {})
    command = [sys.executable, "-m", "loadgen", *_verbosity(), "worker"]
    pinning = [] if cpu is None else ["--cpus", str(cpu)]
    return subprocess.Popen(
        [*wrapper, *command, "--bind", bind, "--exit-with-stdin", *pinning],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
        start_new_session=True,
    )


@dataclass
class Spawned:
    urls: list[str]
    wait_s: float = STOP_TIMEOUT_S
    """How long to wait for them to exit at the end before killing them (0: do not wait)."""


@contextlib.contextmanager
def local_workers(count: int, token: str, cpus: Sequence[int] = ()) -> Iterator[Spawned]:
    """Start ``count`` workers (worker ``i`` pinned to ``cpus[i % len(cpus)]`` when given);
    yield their URLs; stop them (by closing stdin) at the end."""
    processes: list[subprocess.Popen] = []
    spawned = Spawned([])
    try:
        for index in range(count):
            processes.append(start_worker_process(token, cpus[index % len(cpus)] if cpus else None))
        deadline = time.monotonic() + START_TIMEOUT_S
        spawned.urls = [
            announced_url(process, deadline, f"local process {index}")
            for index, process in enumerate(processes)
        ]
        yield spawned
    finally:
        stop_worker_processes(processes, spawned.wait_s)


def stop_worker_processes(
    processes: list[subprocess.Popen], wait_s: float = STOP_TIMEOUT_S
) -> None:
    """Close their stdin (they stop on their own); kill what still runs after ``wait_s``
    (with 0, leave them to end by themselves)."""
    for process in processes:
        if process.stdin is not None:
            process.stdin.close()
    if wait_s <= 0:
        return
    deadline = time.monotonic() + wait_s
    for process in processes:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log.warning("worker process %d did not stop; killing it", process.pid)
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
