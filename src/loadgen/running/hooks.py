"""Commands run before and after a run (drop the page cache, snapshot broker configs, ...).

Each command runs through ``/bin/sh -c`` in its own process group, so a timeout or Ctrl-C ends
the whole pipeline it started, not just the shell. Its output (stdout and stderr together) is
kept, up to :data:`OUTPUT_LIMIT` characters from its end, with its exit code and duration, for
the result's ``run.hooks`` block: a number measured after ``sync; echo 3 > drop_caches`` is not
the number measured with a warm cache, and the result should say which it is.

A failing ``before_run`` command stops the run before anything is created (:class:`HookFailed`);
the commands after it are not run. ``after_run`` commands all run, whatever the run's outcome,
and a failure there is recorded and reported, never raised: the measurement is already done.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from loadgen.base.errors import ConfigError, LoadgenError

log = logging.getLogger("loadgen.running.hooks")
Phase = Literal["before_run", "after_run", "fault", "fault_undo"]
"""When a command runs: around the run (hooks), or as a fault and its undo
(:mod:`loadgen.running.scenarios.faults`)."""
OUTPUT_LIMIT = 4096
"""Characters of a command's output kept in the result (its end: errors are printed last)."""
DEFAULT_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class RunHooks:
    """The commands of both phases and the longest any one of them may take."""

    before_run: tuple[str, ...] = ()
    after_run: tuple[str, ...] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __bool__(self) -> bool:
        return bool(self.before_run or self.after_run)


@dataclass(frozen=True)
class HookRecord:
    """What one command did: how it ended and what it printed."""

    phase: Phase
    command: str
    exit_code: int | None
    """None when the command was killed at its timeout."""
    seconds: float
    output: str
    truncated: bool

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "command": self.command,
            "exitCode": self.exit_code,
            "timedOut": self.exit_code is None,
            "seconds": round(self.seconds, 3),
            "output": self.output,
            "outputTruncated": self.truncated,
        }

    def describe(self) -> str:
        return describe_hook(self.to_json())


def describe_hook(record: Mapping[str, Any]) -> str:
    """One line for a person: ``before_run `sync`: exit 0 after 0.1 s``."""
    ending = "timed out" if record["timedOut"] else f"exit {record['exitCode']}"
    return f"{record['phase']} `{record['command']}`: {ending} after {record['seconds']:.1f} s"


class HookFailed(LoadgenError):
    """A ``before_run`` command failed or timed out, so the run was not started.

    Exit 2, as for bad input: the run configuration asked for a preparation that cannot be done.
    """

    exit_code = 2
    stop_reason = "hook-failed"

    def __init__(self, record: HookRecord) -> None:
        self.record = record
        tail = record.output.strip().splitlines()[-5:]
        shown = "\n  ".join(tail) if tail else "(no output)"
        super().__init__(f"{record.describe()}; the run was not started. Output:\n  {shown}")


def run_command(phase: Phase, command: str, timeout_s: float, env: Mapping[str, str]) -> HookRecord:
    """Run ``command`` in a shell of its own process group; its record, never an exception."""
    started = time.monotonic()
    process = subprocess.Popen(
        ["/bin/sh", "-c", command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, **env},
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout_s)
        exit_code: int | None = process.returncode
    except subprocess.TimeoutExpired:
        _kill_group(process)
        output, _ = process.communicate()
        exit_code = None
    except BaseException:  # Ctrl-C: the command must not outlive loadgen
        _kill_group(process)
        process.wait()
        raise
    text = output.decode("utf-8", errors="replace")
    return HookRecord(
        phase=phase,
        command=command,
        exit_code=exit_code,
        seconds=time.monotonic() - started,
        output=text[-OUTPUT_LIMIT:],
        truncated=len(text) > OUTPUT_LIMIT,
    )


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended on its own meanwhile
        os.killpg(process.pid, signal.SIGKILL)


def run_before(hooks: RunHooks, env: Mapping[str, str]) -> list[HookRecord]:
    """Run the ``before_run`` commands in order; raise :class:`HookFailed` at the first failure."""
    records = []
    for command in hooks.before_run:
        record = run_command("before_run", command, hooks.timeout_s, env)
        if not record.ok:
            raise HookFailed(record)
        records.append(record)
    return records


def run_after(hooks: RunHooks, env: Mapping[str, str]) -> list[HookRecord]:
    """Run every ``after_run`` command; a failure is logged and recorded, never raised."""
    records = [
        run_command("after_run", command, hooks.timeout_s, env) for command in hooks.after_run
    ]
    for record in records:
        if not record.ok:
            log.warning("%s; output ends: %s", record.describe(), record.output.strip()[-300:])
    return records


def hook_env(run_id: str, workload: str, driver: str, **extra: str) -> dict[str, str]:
    """What a command learns about the run from its environment (``LOADGEN_*``)."""
    values = {"run_id": run_id, "workload": workload, "driver": driver, **extra}
    return {f"LOADGEN_{key.upper()}": value for key, value in values.items()}


def make_hooks(
    before_run: Sequence[str],
    after_run: Sequence[str],
    timeout_s: float,
    names: tuple[str, str, str] = ("--before-run", "--after-run", "--hook-timeout"),
) -> RunHooks:
    """Checked hooks; ``names`` are the options (or arguments) the values came from."""
    for commands, name in ((before_run, names[0]), (after_run, names[1])):
        for command in commands:
            if not command.strip():  # a mistake worth an error, not a no-op
                raise ConfigError(
                    "a hook command must not be empty",
                    path=name,
                    value=command,
                    allowed="a command",
                )
    if timeout_s <= 0:
        raise ConfigError(
            "must be positive", path=names[2], value=timeout_s, allowed="a positive duration"
        )
    return RunHooks(tuple(before_run), tuple(after_run), timeout_s)
