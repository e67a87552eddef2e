"""What this host's processes can do, measured once and kept in a file, not in the code.

Two kinds of figures: each driver's per-process capacity (messages sent plus received per CPU
second of one loadgen process: how many processes a run gets by default,
:mod:`loadgen.distributed.sizing`), and the run-queue waits above which a host counts as busy
(the result's ``clientCpu.hostBusy``). ``loadgen calibrate`` measures the capacities on this
host and writes them to :func:`user_file`; until it has, the figures shipped with loadgen
(``calibration.json`` beside this module, with the host and command that measured them) hold.
A driver with no capacity in either file gets one process for a fixed-rate run.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from loadgen.base.errors import ConfigError

FILE_NAME = "calibration.json"
SHIPPED = Path(__file__).resolve().with_name(FILE_NAME)
ENVIRONMENT = "LOADGEN_CALIBRATION"


@dataclass(frozen=True)
class Calibration:
    """The figures one calibration file holds, and where they come from."""

    process_capacity: dict[str, float] = field(default_factory=dict)
    """Messages sent plus received per CPU second of one process, by driver."""
    host_busy_share: float = 0.5
    """A client whose threads waited for a CPU at least this share of the time they could run
    (and :attr:`host_busy_wait_us` per time slice) was on a busy host."""
    host_busy_wait_us: float = 100.0
    """The mean wait for a CPU per time slice above which a host counts as busy: threads that
    wake often wait a few tens of µs on an idle host too, each wait short."""
    source: str = ""
    """The file, the host and the command that produced the figures."""

    def to_json(self) -> dict[str, Any]:
        return {
            "processCapacity": {
                kind: round(value) for kind, value in self.process_capacity.items()
            },
            "hostBusy": {
                "share": self.host_busy_share,
                "waitPerSliceMicros": self.host_busy_wait_us,
            },
            "source": self.source,
        }


def user_file() -> Path:
    """Where ``loadgen calibrate`` writes and every run reads: ``$LOADGEN_CALIBRATION``, else
    ``~/.config/loadgen/calibration.json``."""
    configured = os.environ.get(ENVIRONMENT)
    return (
        Path(configured) if configured else Path.home() / ".config" / "loadgen" / "calibration.json"
    )


def read(path: Path) -> Calibration:
    """One calibration file; a broken one is a :class:`ConfigError` naming it."""
    try:
        data = json.loads(path.read_text())
        busy = data.get("hostBusy", {})
        return Calibration(
            process_capacity={k: float(v) for k, v in data.get("processCapacity", {}).items()},
            host_busy_share=float(busy.get("share", Calibration.host_busy_share)),
            host_busy_wait_us=float(busy.get("waitPerSliceMicros", Calibration.host_busy_wait_us)),
            source=str(data.get("source", path)),
        )
    except (OSError, ValueError, AttributeError, TypeError) as error:
        raise ConfigError(
            f"unreadable calibration: {error}",
            file=str(path),
            allowed="the JSON `loadgen calibrate` writes",
        ) from None


@cache
def current() -> Calibration:
    """The user's calibration over the shipped one: a driver the user's file does not cover
    keeps the shipped capacity."""
    shipped = read(SHIPPED)
    path = user_file()
    if not path.exists():
        return shipped
    own = read(path)
    return Calibration(
        {**shipped.process_capacity, **own.process_capacity},
        own.host_busy_share,
        own.host_busy_wait_us,
        f"{own.source}; other drivers: {shipped.source}",
    )
