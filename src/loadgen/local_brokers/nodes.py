"""The nodes of a local broker ``loadgen brokers up`` started, for a run's fault schedule
(:class:`loadgen.running.scenarios.faults.Nodes`): each one killed, paused, resumed, stopped and
started again by its index, from 1, as the broker's addresses list them.

- A cluster (Apache Kafka, ``--upstream``): node N is the process of the N-th address; it keeps
  its configuration and data in ``node-N`` beside the broker's driver file, where the starter's
  module starts it again alone (its ``start_node_again(folder) -> pid``).
- Any other local broker has one node, its process (tansu, pulsar-lite, RabbitMQ, ...; the
  front of a ``--secure`` one), started again through the launcher on its port and folder, with
  the data it kept (pulsar-lite's, RabbitMQ's; tansu keeps none). A ``--secure`` stand-in cannot
  be: its start makes a new password.

A node started again has its new pid written into the catalogue's state, so that ``loadgen
brokers status`` shows it and ``loadgen brokers down`` stops it. Signals go to the node's
process group where it leads one (every detached start does): a broker whose server runs under
a wrapper (RabbitMQ's ``rabbitmq-server`` script, the Erlang VM its child) is killed, paused and
resumed whole. Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from loadgen.base.errors import LocalBrokerError
from loadgen.driver_api.local.process import LocalBroker
from loadgen.local_brokers import catalogue
from loadgen.local_brokers.launcher import SPARK_KIND, Variant, start_with, starter_of

GONE_TIMEOUT_S = 10.0
"""How long a node may take to be gone after SIGKILL."""
STOP_TIMEOUT_S = 15.0
"""How long a graceful stop may take before SIGKILL: a Kafka node's controlled shutdown moves
its partition leaderships first."""
SIGNAL_TIMEOUT_S = 2.0
"""How long a node may take to show it is paused or running again."""
RESTART_OPTIONS: dict[str, dict[str, Any]] = {"pulsar": {"keep_data": True}}
"""What a kind's starter takes, besides the port and folder, to start the broker that stopped
there again (unless named, its start keeps what the folder holds)."""


def nodes_for(config_text: str) -> LocalNodes | None:
    """The running local broker one of whose node addresses ``config_text`` (a driver
    section, as text) names, else None."""
    for variant, broker in catalogue.running():
        addresses = broker.node_addresses or [broker.address]
        if variant.kind != SPARK_KIND and any(_names(config_text, a) for a in addresses):
            return LocalNodes(variant, broker)
    return None


def _names(text: str, address: str) -> bool:
    """Whether ``text`` names ``address`` (``127.0.0.1:1909`` is not in ``127.0.0.1:19092``)."""
    endpoint = re.escape(_endpoint(address))
    return re.search(rf"(?<![\w.-]){endpoint}(?!\d)", text) is not None


def _endpoint(address: str) -> str:
    """``host:port`` without a scheme, ``localhost`` as ``127.0.0.1``."""
    host, _, port = address.rpartition("//")[2].rpartition(":")
    return f"{'127.0.0.1' if host.lower() == 'localhost' else host.lower()}:{port}"


class LocalNodes:
    """The nodes of one running local broker, numbered from 1 (see the module's docstring)."""

    def __init__(self, variant: Variant, broker: LocalBroker) -> None:
        self.variant = variant
        self._broker = broker
        self._addresses = broker.node_addresses or [broker.address]
        self._pids = [broker.pid, *broker.node_pids]
        self._lock = threading.Lock()
        """Faults on two nodes run on two threads: each pid change, and its state file write,
        one at a time."""

    def count(self) -> int:
        return len(self._addresses)

    def index_of(self, address: str) -> int | None:
        """The node at ``address`` (as a driver names it: ``127.0.0.1:29092``), if one is."""
        wanted = _endpoint(address)
        found = (i for i, known in enumerate(self._addresses, 1) if _endpoint(known) == wanted)
        return next(found, None)

    def address_of(self, index: int) -> str:
        return self._addresses[self._checked(index) - 1]

    def pid_of(self, index: int) -> int:
        with self._lock:
            return self._pids[self._checked(index) - 1]

    def kill(self, index: int) -> None:
        """SIGKILL; returns once the node is gone."""
        pid = self.pid_of(index)
        _signal(pid, signal.SIGKILL)
        if not _within(GONE_TIMEOUT_S, lambda: _gone(pid)):
            raise self._error(index, f"still runs {GONE_TIMEOUT_S:.0f} s after SIGKILL")

    def pause(self, index: int) -> None:
        """SIGSTOP; returns once the node is stopped."""
        pid = self._live_pid(index)
        _signal(pid, signal.SIGSTOP)
        if not _within(SIGNAL_TIMEOUT_S, lambda: _state(pid) in ("T", "t")):
            raise self._error(index, f"not paused {SIGNAL_TIMEOUT_S:.0f} s after SIGSTOP")

    def resume(self, index: int) -> None:
        """SIGCONT; returns once the node runs again."""
        pid = self._live_pid(index)
        _signal(pid, signal.SIGCONT)
        if not _within(SIGNAL_TIMEOUT_S, lambda: _state(pid) not in ("T", "t")):
            raise self._error(index, f"still paused {SIGNAL_TIMEOUT_S:.0f} s after SIGCONT")

    def stop(self, index: int) -> None:
        """A graceful stop (SIGTERM, as ``brokers down`` stops it), SIGKILL after
        :data:`STOP_TIMEOUT_S`; returns once the node is gone."""
        pid = self.pid_of(index)
        if _gone(pid):
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        if not _within(STOP_TIMEOUT_S, lambda: _gone(pid)):
            self.kill(index)

    def start(self, index: int) -> int:
        """Node ``index`` started again, detached, on its port, configuration and data; its new
        pid, once it listens. The catalogue's state gets the new pid (written anew if a status
        check removed it while no node ran)."""
        old = self.pid_of(index)
        if not _gone(old):
            raise self._error(index, f"still runs (pid {old}): kill or stop it first")
        new = self._start(index)
        with self._lock:
            self._pids[index - 1] = new
            if not catalogue.replace_pid(self.variant, old, new):
                pid, *node_pids = self._pids
                catalogue.record(self.variant, replace(self._broker, pid=pid, node_pids=node_pids))
        return new

    def _start(self, index: int) -> int:
        variant, broker = self.variant, self._broker
        if broker.node_addresses and broker.driver_file:
            module = importlib.import_module(starter_of(variant).starter.partition(":")[0])
            start_node_again = getattr(module, "start_node_again", None)
            if start_node_again is None:
                missing = f"{module.__name__} has no start_node_again"
                raise self._error(index, f"cannot be started again alone: {missing}")
            return start_node_again(Path(broker.driver_file).parent / f"node-{index}")
        if variant.secure:
            raise self._error(
                index,
                f"cannot be started again: a start of {variant.shown} makes a new password, "
                "which the run's driver file does not hold",
            )
        port = int(broker.address.rpartition(":")[2])
        options = RESTART_OPTIONS.get(variant.kind, {})
        folder = catalogue.folder_of(variant)
        return start_with(starter_of(variant), port, folder, detach=True, **options).pid

    def _live_pid(self, index: int) -> int:
        pid = self.pid_of(index)
        if _gone(pid):
            raise self._error(index, f"is not running (pid {pid} is gone)")
        return pid

    def _checked(self, index: int) -> int:
        if not 1 <= index <= len(self._addresses):
            raise LocalBrokerError(
                self.variant.kind,
                f"{self.variant.shown} has {len(self._addresses)} node(s), no node {index}",
            )
        return index

    def _error(self, index: int, what: str) -> LocalBrokerError:
        return LocalBrokerError(
            self.variant.kind, f"node {index} ({self.address_of(index)}) {what}"
        )


def _signal(pid: int, sig: signal.Signals) -> None:
    """``sig`` to the process group ``pid`` leads (a detached start's, its children in it), else
    to ``pid``; nothing to a process already gone."""
    with contextlib.suppress(ProcessLookupError):
        if _group_members(pid) and pid != os.getpgid(0):
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)


def _gone(pid: int) -> bool:
    """``pid`` and (where it leads one) its process group are gone; ``pid`` reaped if it is our
    child (a node this process started again)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    return not _present(pid) and not _group_members(pid)


def _present(pid: int) -> bool:
    """Whether a thread of ``pid`` is still there: a killed process's first thread is a zombie
    before the others have exited and let go of its files and ports (a JVM's, an Erlang VM's)."""
    state = _state(pid)
    if state != "Z":
        return state not in ("", "X")
    try:
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


def _group_members(pgid: int) -> list[int]:
    """The processes of process group ``pgid`` still there (:func:`_present`), from ``/proc``."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # gone while read
            continue
        pid = int(stat.parent.name)
        if len(fields) > 2 and fields[2] == str(pgid) and _present(pid):
            members.append(pid)
    return members


def _state(pid: int) -> str:
    """The process's state letter in ``/proc/PID/stat`` (``T``: stopped); ``""`` if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return ""


def _within(timeout_s: float, done: Callable[[], bool]) -> bool:
    """Whether ``done()`` holds within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
