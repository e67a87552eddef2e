"""``faults``: broker nodes killed, paused or stopped on a schedule during the measured phase, to
measure what clients see while a node is down and how fast they recover (loadgen's extension;
OMB has nothing like it)::

    faults:
      - {at: 20s, action: kill, target: broker:2, for: 15s}  # SIGKILL node 2, restart 15 s later
      - {at: 1m, action: pause, target: leader, for: 5s}     # SIGSTOP the leader, SIGCONT later
      - {at: 90s, action: command, command: "tc qdisc add dev lo root netem delay 50ms",
         undo: "tc qdisc del dev lo root", for: 20s}

or on the command line, with the same keys, once per fault::

    --fault 'at=20s action=kill target=broker:2 for=15s'
    --fault "at=90s action=command command='tc qdisc add dev lo root netem delay 50ms' for=20s
             undo='tc qdisc del dev lo root'"

The keys:

- ``at``: seconds or a duration text (``20s``, ``1m30s``) into the measured phase, above 0.
- ``action``: ``kill`` (SIGKILL, restarted after ``for``), ``pause`` (SIGSTOP, SIGCONT after
  ``for``), ``stop`` (a graceful stop, started again after ``for``), ``restart`` (a graceful stop
  and a start at once: no ``for``) or ``command`` (runs ``command`` at ``at``, and ``undo`` when
  ``for`` ends).
- ``target``: ``broker:N`` (node N >= 1 of a local broker started by ``loadgen brokers up ...
  --nodes``) or ``leader`` (the node leading partition 0 of the run's first topic, looked up at
  ``at``). Every action but ``command`` needs one; a command targets what it targets, so it has
  none.
- ``for``: how long the fault lasts, in the forms of ``at``. Needed by ``kill``, ``pause`` and
  ``stop``, refused by ``restart``; a ``command`` takes one when it has an ``undo``.
- ``command``, ``undo``: shell commands, only with ``action: command``.

Each key is checked by its own field validator, so an error names the fault and the key
(``faults.0.for``, ``--fault 1 for``), never just the fault.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_serializer,
    field_validator,
)
from pydantic_core import PydanticCustomError

from loadgen.base.errors import ConfigError
from loadgen.spec.durations import parse_duration
from loadgen.spec.model import parse_model

FIELD = "faults"
OPTION = "--fault"
OPTION_FORM = (
    "KEY=VALUE pairs separated by spaces, e.g. 'at=20s action=kill target=broker:2 for=15s'"
)

Action = Literal["kill", "pause", "stop", "restart", "command"]
ACTIONS: tuple[str, ...] = get_args(Action)
TARGETED = frozenset({"kill", "pause", "stop", "restart"})
"""The actions made on a broker node, which need a ``target``."""
LASTING = frozenset({"kill", "pause", "stop"})
"""The actions that keep a node down until ``for`` ends, which need a ``for``."""

TARGET_FORMS = "broker:N (N >= 1) or leader"
BROKER_TARGET = re.compile(r"broker:([1-9][0-9]*)")
LEADER = "leader"


@dataclass(frozen=True)
class FaultTarget:
    """The node a fault is made on: node ``node`` of the local broker, or the leader (``None``)
    of partition 0 of the run's first topic, looked up when the fault starts."""

    node: int | None

    @property
    def is_leader(self) -> bool:
        return self.node is None

    def __str__(self) -> str:
        return LEADER if self.node is None else f"broker:{self.node}"


def _missing(key: str, why: str) -> PydanticCustomError:
    """A key the other keys make required: reported like any missing field, at its own path."""
    return PydanticCustomError("missing", "{key} is required: {why}", {"key": key, "why": why})


class Fault(BaseModel):
    """One fault: ``action`` made on ``target`` at ``at_s`` seconds into the measured phase, and
    undone ``for_s`` seconds later."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    at_s: float = Field(alias="at", gt=0, allow_inf_nan=False)
    """Seconds into the measured phase (or a duration text: ``20s``, ``1m30s``)."""
    action: Action
    """What is done: ``kill``, ``pause``, ``stop``, ``restart`` or ``command``."""
    target: FaultTarget | None = Field(default=None, validate_default=True)
    """The node (``broker:N`` or ``leader``); None for ``action: command``."""
    for_s: float | None = Field(
        default=None, alias="for", gt=0, allow_inf_nan=False, validate_default=True
    )
    """Seconds the fault lasts; None for ``restart`` (and a ``command`` without ``undo``)."""
    command: str | None = Field(default=None, validate_default=True)
    """The shell command run at ``at`` (``action: command`` only)."""
    undo: str | None = Field(default=None, validate_default=True)
    """The shell command run when ``for`` ends (``action: command`` only)."""

    # Fields are validated in the order above, so each check below sees the keys before its own
    # in ``info.data``; a key that failed its own check is absent there, and is not judged again.

    @field_validator("at_s", "for_s", mode="before")
    @classmethod
    def _duration_text(cls, value: Any, info: ValidationInfo) -> Any:
        """A ValueError, not the parser's ConfigError, so the error names the list item."""
        if isinstance(value, bool):
            raise ValueError("a time is seconds or a duration text (e.g. 30s, 1m30s)")
        if not isinstance(value, str):
            return value
        try:
            return parse_duration(value, option=info.field_name or "")
        except ConfigError as error:
            raise ValueError(f"{error.args[0]} (e.g. 30s, 1m30s, or seconds)") from None

    @field_validator("target", mode="plain")
    @classmethod
    def _target(cls, value: Any, info: ValidationInfo) -> FaultTarget | None:
        action = info.data.get("action")
        if value is None:
            if action in TARGETED:
                raise _missing("target", f"the node to {action} ({TARGET_FORMS})")
            return None
        if action == "command":
            raise ValueError("a command acts on what it names itself: no target with it")
        if isinstance(value, FaultTarget):
            return value
        match = BROKER_TARGET.fullmatch(value) if isinstance(value, str) else None
        if not (match or value == LEADER):
            # a literal error (a value out of a fixed set) carries what is allowed
            raise PydanticCustomError(
                "literal_error", "Input should be {expected}", {"expected": TARGET_FORMS}
            )
        return FaultTarget(int(match.group(1)) if match else None)

    @field_validator("for_s")
    @classmethod
    def _lasting(cls, value: float | None, info: ValidationInfo) -> float | None:
        action = info.data.get("action")
        if value is None and action in LASTING:
            raise _missing("for", f"how long {action} keeps the node down")
        if value is not None and action == "restart":
            raise ValueError(
                "a restart starts the node again at once, so it takes no for "
                "(action: stop with for keeps a node down)"
            )
        return value

    @field_validator("command", "undo")
    @classmethod
    def _commands(cls, value: str | None, info: ValidationInfo) -> str | None:
        key = info.field_name
        action = info.data.get("action")
        if value is None:
            if key == "command" and action == "command":
                raise _missing("command", "the shell command to run")
            return None
        if "action" in info.data and action != "command":
            raise ValueError(f"{key} goes with action: command only, not {action}")
        if not value.strip():
            raise ValueError(f"{key} is an empty shell command")
        if key == "undo" and "for_s" in info.data and info.data["for_s"] is None:
            raise ValueError("undo runs when for ends: give for too (or no undo)")
        return value

    @field_serializer("target")
    def _target_text(self, target: FaultTarget | None) -> str | None:
        return None if target is None else str(target)

    @property
    def end_s(self) -> float:
        """Seconds into the measured phase when the fault is over (``at`` + ``for``)."""
        return self.at_s + (self.for_s or 0.0)


def fault_to_json(fault: Fault) -> dict[str, Any]:
    """The fault as the YAML spells it (for the config echo in results), unset keys left out."""
    return fault.model_dump(by_alias=True, exclude_none=True)


def yaml_path(index: int, key: str) -> str:
    """Where key ``key`` of the ``index``-th fault of a workload file is: ``faults.0.for``."""
    return f"{FIELD}.{index}.{key}"


def option_path(index: int, key: str) -> str:
    """Where key ``key`` of the ``index``-th ``--fault`` (counted from 0) is: ``--fault 1 for``."""
    return f"{OPTION} {index + 1} {key}".rstrip()


def parse_fault_option(text: str, index: int) -> dict[str, str]:
    """The keys of one ``--fault`` value (``index`` counts from 0): ``KEY=VALUE`` pairs split
    like a shell line, so a value with spaces can be quoted (``command='tc qdisc ...'``)."""
    where = option_path(index, "")
    try:
        tokens = shlex.split(text)
    except ValueError as error:  # an unclosed quote
        raise ConfigError(
            f"cannot split the value: {error}", path=where, value=text, allowed=OPTION_FORM
        ) from None
    if not tokens:
        raise ConfigError("an empty fault", path=where, value=text, allowed=OPTION_FORM)
    pairs: dict[str, str] = {}
    for token in tokens:
        key, equals, value = token.partition("=")
        if not (key and equals):
            raise ConfigError(
                f"{token!r} is no KEY=VALUE pair", path=where, value=text, allowed=OPTION_FORM
            )
        if not value:
            raise ConfigError(
                f"{key}= has no value",
                path=option_path(index, key),
                value=text,
                allowed=OPTION_FORM,
            )
        if key in pairs:
            raise ConfigError(
                f"{key} is given twice",
                path=option_path(index, key),
                value=text,
                allowed="each key once",
            )
        pairs[key] = value
    return pairs


def faults_from_options(texts: Sequence[str]) -> tuple[Fault, ...]:
    """The faults of repeated ``--fault`` values, checked like the YAML ones; a ConfigError names
    the option and the key (``--fault 2 for``)."""
    faults = []
    for index, text in enumerate(texts):
        pairs = parse_fault_option(text, index)
        try:
            faults.append(parse_model(Fault, pairs, file=None))
        except ConfigError as error:
            raise ConfigError(
                error.args[0],
                path=option_path(index, error.path or ""),
                value=error.value,
                allowed=error.allowed,
            ) from None
    return tuple(faults)


def check_faults_within(
    faults: Sequence[Fault],
    measured_s: float,
    *,
    path: Callable[[int, str], str] = yaml_path,
) -> None:
    """Every fault starts, and is over (``at`` + ``for``), before the measured phase of
    ``measured_s`` seconds ends; ``path`` spells where a fault is (:func:`option_path` for the
    ``--fault`` ones)."""
    for index, fault in enumerate(faults):
        if not fault.at_s < measured_s:
            raise ConfigError(
                f"this fault comes after the measured phase ends ({measured_s:g} s)",
                path=path(index, "at"),
                value=fault.at_s,
                allowed=f"below {measured_s:g} s",
            )
        if fault.for_s is not None and not fault.end_s < measured_s:
            left = measured_s - fault.at_s
            raise ConfigError(
                f"this fault would last past the end of the measured phase ({measured_s:g} s, "
                f"{left:g} s after at)",
                path=path(index, "for"),
                value=fault.for_s,
                allowed=f"below {left:g} s",
            )
