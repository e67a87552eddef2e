"""One run, from specs to a result file: payloads, driver, scenario, TestResult JSON.

Shared by the CLI and the Python API, so both write the same files.
"""

from __future__ import annotations

import logging
import platform
import socket
import subprocess
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import loadgen
from loadgen.driver import open_driver
from loadgen.errors import RunAborted
from loadgen.payload import build_payloads
from loadgen.results.files import result_stem, write_json_atomic
from loadgen.results.testresult import ResultHeader, build_test_result
from loadgen.scenarios.tailing import RunOptions, RunOutcome, run_tailing
from loadgen.spec import Workload
from loadgen.spec.driver_spec import DriverSpec

log = logging.getLogger("loadgen.run")

SECRET_MARKERS = ("password", "secret", "token", "credential", "sasl.jaas", "private")


@dataclass(frozen=True)
class RunReport:
    """Where the result went, what it says, and the raw outcome behind it."""

    path: Path
    result: dict[str, Any]
    outcome: RunOutcome


def redact(value: Any) -> Any:
    """Replace secret-looking values (by key name, or URI userinfo) so results never hold them."""
    if isinstance(value, dict):
        return {
            key: "<redacted>"
            if any(marker in str(key).lower() for marker in SECRET_MARKERS)
            else redact(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [redact(item) for item in value]
    if isinstance(value, str):
        return _redact_text(value)
    return value


def _redact_text(text: str) -> str:
    lines = []
    for line in text.splitlines() or [text]:
        key, sep, _ = line.partition("=")
        if sep and any(marker in key.lower() for marker in SECRET_MARKERS):
            line = f"{key}=<redacted>"
        lines.append(_strip_userinfo(line))
    return "\n".join(lines)


def _strip_userinfo(text: str) -> str:
    scheme, sep, rest = text.partition("://")
    if sep and "@" in rest.split("/", 1)[0]:
        return f"{scheme}://<redacted>@{rest.split('@', 1)[1]}"
    return text


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


def run_metadata(
    workload: Workload, spec: DriverSpec, options: RunOptions, outcome: RunOutcome
) -> dict[str, Any]:
    """The ``run`` block of the result: versions, host, config echo, drain and clock facts."""
    return {
        "loadgenVersion": loadgen.__version__,
        "pythonVersion": platform.python_version(),
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "gitSha": _git_sha(),
        "startedAt": datetime.fromtimestamp(outcome.started_ms / 1000, UTC).isoformat(),
        "endedAt": datetime.fromtimestamp(outcome.ended_ms / 1000, UTC).isoformat(),
        "workload": workload.model_dump(by_alias=True, mode="json"),
        "driver": {"name": spec.name, "driver": spec.kind, "config": redact(dict(spec.config))},
        "options": {key: value for key, value in asdict(options).items() if key != "on_interval"},
        "topics": outcome.topics,
        "drain": {
            "seconds": round(outcome.drain_seconds, 3),
            "unacknowledged": outcome.pending_acks,
            "undelivered": outcome.undelivered,
        },
        "stopDetail": outcome.stop_detail or None,
        "workers": ["local"],
        "clockOffsetsMs": {"local": 0.0},
    }


def run_one(
    workload: Workload,
    workload_path: Path | None,
    spec: DriverSpec,
    out_dir: Path,
    options: RunOptions,
) -> RunReport:
    """Run ``workload`` against ``spec`` and write the result; raise RunAborted if cut short.

    The result file is written before RunAborted is raised, so nothing measured is lost.
    """
    payloads = build_payloads(workload, workload_path)
    driver = open_driver(spec)
    outcome = run_tailing(driver, workload, payloads, options)
    name = workload.name or (workload_path.stem if workload_path else "workload")
    header = ResultHeader(
        workload=name,
        driver=spec.name,
        message_size=workload.message_size,
        topics=workload.topics,
        partitions=workload.partitions_per_topic,
        producers_per_topic=workload.producers_per_topic,
        consumers_per_topic=workload.consumer_per_subscription,
        subscriptions_per_topic=workload.subscriptions_per_topic,
    )
    result = build_test_result(
        header,
        outcome.intervals,
        run=run_metadata(workload, spec, options, outcome),
        probe_sent=outcome.totals.probe_sent,
        probe_received=outcome.totals.probe_received,
        incomplete=outcome.incomplete,
        stop_reason=outcome.stop_reason,
    )
    started = datetime.fromtimestamp(outcome.started_ms / 1000, UTC)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{result_stem(name, spec.name, started)}.json"
    write_json_atomic(path, result)
    if outcome.incomplete:
        raise RunAborted(outcome.stop_reason or "error", outcome.stop_detail, str(path))
    return RunReport(path, result, outcome)
