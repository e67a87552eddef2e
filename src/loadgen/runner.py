"""One run, from specs to a result file: payloads, driver, scenario, TestResult JSON.

Shared by the CLI and the Python API, so both write the same files.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from loadgen.cluster.placement import Placement, open_worker
from loadgen.errors import RunAborted
from loadgen.hooks import RunHooks, hook_env, run_after, run_before
from loadgen.metrics.run import publishing
from loadgen.payload import build_payloads
from loadgen.pipeline.landing import RunIdentity, open_landing
from loadgen.redaction import redact
from loadgen.results.checkpoint import UNFINISHED, UNFINISHED_DETAIL, Checkpoint
from loadgen.results.files import result_stem, write_json_atomic
from loadgen.results.hlog import write_hlogs
from loadgen.results.metadata import configuration, run_metadata
from loadgen.results.testresult import ResultHeader, build_test_result
from loadgen.scenarios.tailing import RunOptions, RunOutcome, run_tailing
from loadgen.spec import Workload
from loadgen.spec.driver_spec import DriverSpec
from loadgen.stats import IntervalStats
from loadgen.worker.local import WORKER_ID

IN_PROCESS = Placement()
NO_HOOKS = RunHooks()


@dataclass(frozen=True)
class RunReport:
    """Where the result went, what it says, and the raw outcome behind it."""

    path: Path
    result: dict[str, Any]
    outcome: RunOutcome


def execute(
    workload: Workload,
    workload_path: Path | None,
    spec: DriverSpec,
    options: RunOptions,
    placement: Placement = IN_PROCESS,
    hooks: RunHooks = NO_HOOKS,
    checkpoint_dir: Path | None = None,
) -> tuple[str, dict[str, Any], RunOutcome]:
    """Run ``workload`` against ``spec``: its name, the result document, the raw outcome.

    Never raises for a run cut short: the outcome says ``incomplete`` and the document has
    everything measured until then (and the pipeline, if any, gets the end marker all the same).
    ``hooks`` run before anything is created and after the topics are gone; a failing
    ``before_run`` command raises :class:`~loadgen.hooks.HookFailed` and nothing is run.
    With ``checkpoint_dir``, the result so far is written there after every interval under the
    name the final result will have (:mod:`loadgen.results.checkpoint`).
    """
    name = workload.name or (workload_path.stem if workload_path else "workload")
    run_id = uuid.uuid4().hex
    setup = configuration(workload, spec)
    payloads = build_payloads(workload, workload_path)
    env = hook_env(run_id, name, spec.name)
    done_hooks = run_before(hooks, env)
    options = replace(options, started_ms=options.started_ms or time.time_ns() // 1_000_000)

    def document(outcome: RunOutcome) -> dict[str, Any]:
        return _document(name, workload, spec, options, outcome, run_id, setup, placement)

    if checkpoint_dir is not None:
        checkpoint = _checkpoint(checkpoint_dir, name, spec, options.started_ms, document)
        options = replace(options, on_interval=checkpoint.chain(options.on_interval))
    landing = None
    if options.pipeline_dir is not None:
        identity = RunIdentity(run_id, WORKER_ID, 1, name, spec.name, spec.kind, setup)
        landing = open_landing(Path(options.pipeline_dir), identity)
        options = replace(options, on_interval=landing.chain(options.on_interval))
    status = "failed"
    try:
        with (
            publishing(options, run_id=run_id, workload=name, driver=spec.name) as options,
            open_worker(spec, workload, placement) as worker,
        ):
            outcome = run_tailing(worker, workload, payloads, options)
        status = "incomplete" if outcome.incomplete else "complete"
    finally:  # after_run undoes what before_run did, so it runs whenever before_run did
        done_hooks += run_after(hooks, {**env, "LOADGEN_RUN_STATUS": status})
    if landing is not None:
        landing.end(
            outcome.intervals, incomplete=outcome.incomplete, stop_reason=outcome.stop_reason
        )
    result = document(outcome)
    if hooks:
        result["run"]["hooks"] = [redact(record.to_json()) for record in done_hooks]
    return name, result, outcome


def _checkpoint(
    out_dir: Path,
    name: str,
    spec: DriverSpec,
    started_ms: int,
    document: Callable[[RunOutcome], dict[str, Any]],
) -> Checkpoint:
    def so_far(intervals: list[IntervalStats]) -> dict[str, Any]:
        return document(
            RunOutcome(
                intervals=intervals,
                started_ms=started_ms,
                ended_ms=intervals[-1].end_ms,
                incomplete=True,
                stop_reason=UNFINISHED,
                stop_detail=UNFINISHED_DETAIL,
            )
        )

    return Checkpoint(result_path(out_dir, name, spec, started_ms), started_ms, so_far)


def _document(
    name: str,
    workload: Workload,
    spec: DriverSpec,
    options: RunOptions,
    outcome: RunOutcome,
    run_id: str,
    setup: dict[str, Any],
    placement: Placement,
) -> dict[str, Any]:
    """The TestResult document of ``outcome`` (finished, cut short or still going)."""
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
    return build_test_result(
        header,
        outcome.intervals,
        run=run_metadata(workload, spec, options, outcome, run_id, setup, placement),
        probe_sent=outcome.totals.probe_sent,
        probe_received=outcome.totals.probe_received,
        incomplete=outcome.incomplete,
        stop_reason=outcome.stop_reason,
        accounting=outcome.accounting,
        catch_up=outcome.catch_up,
        tailing_per_topic=workload.tailing_subscriptions_per_topic,
        extensions=outcome.extensions,
    )


def result_path(out_dir: Path, name: str, spec: DriverSpec, started_ms: int) -> Path:
    """Where a run's result goes: OMB's ``<workload>-<driver>-<UTC time>.json`` in ``out_dir``."""
    started = datetime.fromtimestamp(started_ms / 1000, UTC)
    return out_dir / f"{result_stem(name, spec.name, started)}.json"


def run_one(
    workload: Workload,
    workload_path: Path | None,
    spec: DriverSpec,
    out_dir: Path,
    options: RunOptions,
    placement: Placement = IN_PROCESS,
    hooks: RunHooks = NO_HOOKS,
) -> RunReport:
    """Run ``workload`` against ``spec`` and write the result; raise RunAborted if cut short.

    The result file is written before RunAborted is raised, so nothing measured is lost; while
    the run goes, it holds the last completed interval's checkpoint.
    """
    name, result, outcome = execute(
        workload, workload_path, spec, options, placement, hooks, checkpoint_dir=out_dir
    )
    path = result_path(out_dir, name, spec, outcome.started_ms)
    write_json_atomic(path, result)
    write_hlogs(path, outcome.intervals, outcome.started_ms)
    if outcome.incomplete:
        raise RunAborted(outcome.stop_reason or "error", outcome.stop_detail, str(path))
    return RunReport(path, result, outcome)
