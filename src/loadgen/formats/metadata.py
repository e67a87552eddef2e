"""The ``run`` block of a result: versions, host, git sha, config echo without secrets."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import loadgen.base.version
from loadgen.base.cpus import available_cpus
from loadgen.base.redaction import redact
from loadgen.driver_api import load_driver_class
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine import recorder
from loadgen.spec import Workload

ENGINE_DISTRIBUTIONS = ("numpy",)
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
        "loadgenVersion": loadgen.base.version.__version__,
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
