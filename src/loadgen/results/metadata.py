"""The ``run`` block of a result: versions, host, git sha, config echo without secrets."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import loadgen
from loadgen import recorder
from loadgen.cpus import available_cpus
from loadgen.driver import load_driver_class
from loadgen.outcome import RunOutcome
from loadgen.redaction import redact
from loadgen.spec import Workload
from loadgen.spec.driver_spec import DriverSpec

if TYPE_CHECKING:  # runstart builds the result with this module
    from loadgen.results.runstart import RunStart

ENGINE_DISTRIBUTIONS = ("hdrhistogram",)
"""Libraries of the engine whose versions explain a result's numbers (besides the driver's)."""


def client_versions(spec: DriverSpec) -> dict[str, str]:
    """Installed versions of the run's driver's ``client_distributions`` and of
    :data:`ENGINE_DISTRIBUTIONS`; absent ones are left out."""
    found = {}
    for name in (*load_driver_class(spec).client_distributions, *ENGINE_DISTRIBUTIONS):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def _git_sha() -> str | None:
    source = Path(loadgen.__file__).resolve().parent
    try:
        done = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=2,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def configuration(workload: Workload, spec: DriverSpec) -> dict[str, Any]:
    """What a run is, known before it starts: versions, host, workload and driver config."""
    return {
        "loadgenVersion": loadgen.__version__,
        "pythonVersion": platform.python_version(),
        "recorderEngine": recorder.ENGINE,
        "clientVersions": client_versions(spec),
        "host": socket.gethostname(),
        "cpuCount": os.cpu_count(),
        "cpuAffinity": None if (cpus := available_cpus()) is None else sorted(cpus),
        "platform": platform.platform(),
        "gitSha": _git_sha(),
        "workload": workload.model_dump(by_alias=True, mode="json"),
        "driver": {"name": spec.name, "driver": spec.kind, "config": redact(dict(spec.config))},
    }


def run_metadata(start: RunStart, outcome: RunOutcome) -> dict[str, Any]:
    """The ``run`` block of the result: id, configuration, config echo, drain and clock facts.

    The start's ``setup`` is the run's :func:`configuration`, taken once when it started (the
    landing files carry the same); the workers, their clock offsets and roles come from the
    outcome (the worker that ran it).
    """
    return {
        "runId": start.run_id,
        **start.setup,
        "startedAt": datetime.fromtimestamp(outcome.started_ms / 1000, UTC).isoformat(),
        "endedAt": datetime.fromtimestamp(outcome.ended_ms / 1000, UTC).isoformat(),
        "options": start.options,
        "topics": outcome.topics,
        "drain": {
            "seconds": round(outcome.drain_seconds, 3),
            "unacknowledged": outcome.pending_acks,
            "undelivered": outcome.undelivered,
        },
        "phaseSeconds": {phase: round(t, 3) for phase, t in outcome.phase_seconds.items()},
        "stopDetail": outcome.stop_detail or None,
        "placement": start.placement,
        **outcome.placement,
    }
