"""The workload's fault schedule, made during the measured phase (a phase control, as the rate
controls and consumer changes are: :mod:`.rate_control`).

Each fault runs on a thread of its own, so a node that takes seconds to stop or start never
holds the stats loop: the thread makes the fault (SIGKILL, SIGSTOP, a graceful stop, the user's
command), waits out ``for``, and undoes it (the node started again on its port and data,
SIGCONT, the ``undo`` command). ``leader`` is looked up when the fault is due, through the
driver (the node leading partition 0 of the run's first topic). A run that ends early undoes
every fault still on (:meth:`FaultSchedule.settle`): no node is left paused or down.

Each fault is recorded with when it started and ended (epoch ms) and what was done; the result's
figures around it (windows, unavailability, recovery, losses) are computed from the intervals
afterwards (:mod:`loadgen.formats.faults`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from loadgen.base.errors import ConfigError
from loadgen.base.redaction import redact
from loadgen.engine.contract import Worker
from loadgen.running.hooks import HookRecord, Phase, run_command
from loadgen.running.scenarios.timetable import Timetable
from loadgen.spec.faults import Fault

log = logging.getLogger("loadgen.run")

COMMAND_TIMEOUT_S = 60.0
"""The longest a fault's command or undo may take (killed then, its exit code null)."""
SETTLE_TIMEOUT_S = 60.0
"""How long a run that ends early waits for its faults to be undone."""


class Nodes(Protocol):
    """The nodes of the local broker a run's faults act on
    (:class:`loadgen.local_brokers.nodes.LocalNodes`), numbered from 1."""

    def count(self) -> int: ...

    def index_of(self, address: str) -> int | None: ...

    def address_of(self, index: int) -> str: ...

    def kill(self, index: int) -> None: ...

    def pause(self, index: int) -> None: ...

    def resume(self, index: int) -> None: ...

    def stop(self, index: int) -> None: ...

    def start(self, index: int) -> int:
        """Start node ``index`` again on its port and data; its new pid."""
        ...


@dataclass
class FaultRecord:
    """What one fault did, as the result shows it (before its figures are added)."""

    fault: Fault
    node: int | None = None
    address: str | None = None
    started_ms: int | None = None
    ended_ms: int | None = None
    error: str | None = None
    commands: list[HookRecord] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        fault = self.fault
        return {
            "at": fault.at_s,
            "action": fault.action,
            "target": None if fault.target is None else str(fault.target),
            "for": fault.for_s,
            "node": self.node,
            "address": self.address,
            "startedAt": self.started_ms,
            "endedAt": self.ended_ms,
            "error": self.error,
            "commands": [redact(record.to_json()) for record in self.commands],
        }


def check_targets(faults: tuple[Fault, ...], nodes: Nodes | None) -> None:
    """Every fault's target exists: a local broker serves the run, with node N (before the
    run: nothing is started for a schedule that cannot be made)."""
    for index, fault in enumerate(faults):
        target = fault.target
        if target is None:
            continue
        if nodes is None:
            raise ConfigError(
                "no local broker started by `loadgen brokers up` serves the driver file's "
                "addresses: a fault's target is one of its nodes",
                path=f"faults.{index}.target",
                value=str(target),
                allowed="a run against `loadgen brokers up`'s broker, or action: command",
            )
        if target.node is not None and target.node > nodes.count():
            raise ConfigError(
                f"the local broker has {nodes.count()} node(s)",
                path=f"faults.{index}.target",
                value=str(target),
                allowed=f"broker:1 to broker:{nodes.count()}, or leader",
            )


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class FaultSchedule:
    """Makes a workload's faults when they are due and undoes them when their time is up."""

    def __init__(
        self, faults: tuple[Fault, ...], nodes: Nodes | None, env: Mapping[str, str]
    ) -> None:
        self._timetable = Timetable(faults)
        self._nodes = nodes
        self._env = dict(env)
        self._records: list[FaultRecord] = []
        self._threads: list[threading.Thread] = []
        self._ending = threading.Event()
        """Set when the run ends early: each fault still on is undone at once."""

    def begin(self, phase: str, now: float, seconds: float) -> None:
        self._timetable.begin(phase, now)

    def poll(self, worker: Worker, now: float) -> None:
        for fault in self._timetable.due(now):
            record = FaultRecord(fault)
            self._records.append(record)
            self._aim(record, worker)
            thread = threading.Thread(
                target=self._run, args=(record,), name="loadgen-fault", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def _aim(self, record: FaultRecord, worker: Worker) -> None:
        """The node a fault acts on: ``broker:N``, or the leader as the driver says now."""
        target = record.fault.target
        if target is None or self._nodes is None:
            return
        if target.is_leader:
            leader = worker.partition_leader(0)
            record.node = None if leader is None else self._nodes.index_of(leader)
            if record.node is None:
                record.error = f"no local node leads partition 0 (the driver said {leader})"
                return
        else:
            record.node = target.node
        record.address = self._nodes.address_of(record.node)

    def _run(self, record: FaultRecord) -> None:
        fault = record.fault
        if record.error is not None:
            log.warning("fault %s at %gs not made: %s", fault.action, fault.at_s, record.error)
            return
        try:
            started_ms = _now_ms()  # a graceful stop takes a while: the fault starts with it
            self._make(record)
            record.started_ms = started_ms
            log.warning("fault: %s", self._describe(record, "started"))
            if fault.for_s is not None:
                self._ending.wait(fault.for_s)
            self._undo(record)
        except Exception as error:  # recorded: the run goes on, the fault says what failed
            record.error = f"{type(error).__name__}: {error}"
            log.warning("fault %s at %gs failed: %s", fault.action, fault.at_s, record.error)
        finally:
            record.ended_ms = _now_ms()
            ended = "ended" if record.error is None else f"ended, but {record.error}"
            log.warning("fault: %s", self._describe(record, ended))

    def _make(self, record: FaultRecord) -> None:
        fault, nodes, node = record.fault, self._nodes, record.node
        if fault.action == "command":
            self._command(record, "fault", fault.command or "")
            return
        assert nodes is not None and node is not None  # checked before the run (check_targets)
        {"kill": nodes.kill, "pause": nodes.pause, "stop": nodes.stop, "restart": nodes.stop}[
            fault.action
        ](node)

    def _undo(self, record: FaultRecord) -> None:
        fault, nodes, node = record.fault, self._nodes, record.node
        if fault.action == "command":
            if fault.undo:
                self._command(record, "fault_undo", fault.undo)
            return
        assert nodes is not None and node is not None
        if fault.action == "pause":
            nodes.resume(node)
        else:
            nodes.start(node)

    def _command(self, record: FaultRecord, phase: Phase, command: str) -> None:
        """Run a fault's command (or its undo), kept in the record; one that fails (exit code
        not 0, or killed at its timeout) is the fault's error: it may not have been made."""
        done = run_command(phase, command, COMMAND_TIMEOUT_S, self._env)
        record.commands.append(done)
        if not done.ok and record.error is None:
            what = "timed out" if done.exit_code is None else f"exited {done.exit_code}"
            record.error = f"the {'undo' if phase == 'fault_undo' else 'command'} {what}"

    @staticmethod
    def _describe(record: FaultRecord, what: str) -> str:
        fault = record.fault
        on = "" if record.node is None else f" node {record.node} ({record.address})"
        lasting = "" if fault.for_s is None else f" for {fault.for_s:g}s"
        return f"{fault.action}{on} at {fault.at_s:g}s{lasting} {what}"

    def settle(self) -> None:
        """Undo every fault still on, now, and wait (bounded) until each is undone."""
        self._ending.set()
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def report(self) -> dict[str, Any]:
        return {"faults": [record.to_json() for record in self._records]}
