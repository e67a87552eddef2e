"""One run, from its request to a result file: payloads, hooks, listeners, scenario, TestResult.

Shared by the CLI and the Python API (and the studies above them: sweep, matrix), so all write
the same files. Everything about the run comes in one :class:`~loadgen.running.request.RunRequest`.
"""

from __future__ import annotations

import contextlib
import glob
import json
import sys
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from loadgen.base.errors import NoPlaceLeft, RunAborted
from loadgen.base.files import result_stem, write_json_atomic
from loadgen.base.redaction import redact
from loadgen.distributed.placement import open_worker
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.listeners import Listeners, RunListener
from loadgen.engine.local_worker import WORKER_ID
from loadgen.engine.outcome import RunOutcome, SavedRun
from loadgen.engine.payload import build_payloads
from loadgen.formats.hlog import write_hlogs
from loadgen.formats.journal import JournalWriter, journal_path
from loadgen.formats.metadata import configuration
from loadgen.formats.result_json import ResultHeader, RunStart, result_document
from loadgen.local_brokers.nodes import nodes_for
from loadgen.metrics.board import MetricsBoard
from loadgen.pipeline.landing import LandingFeed, RunIdentity, open_landing
from loadgen.result_files.checkpoint import FINISH_WAIT_S, Checkpoint
from loadgen.result_files.destination import Destination
from loadgen.running import stop
from loadgen.running.hooks import hook_env, run_after, run_before
from loadgen.running.lifecycle import run_workload
from loadgen.running.request import RunRequest
from loadgen.running.scenarios.faults import FaultSchedule, check_targets
from loadgen.spec import Workload


@dataclass(frozen=True)
class _Run:
    """A request once it runs: its start time fixed, its id and its configuration known."""

    request: RunRequest
    run_id: str
    setup: dict[str, Any]

    @classmethod
    def start(cls, request: RunRequest) -> _Run:
        options = request.options
        started = replace(options, started_ms=options.started_ms or time.time_ns() // 1_000_000)
        placement = request.placement.sized(request.driver, request.workload)
        return cls(
            replace(request, options=started, placement=placement),
            uuid.uuid4().hex,
            configuration(request.workload, request.driver),
        )

    @property
    def started_ms(self) -> int:
        return self.request.options.started_ms or 0

    def facts(self) -> RunStart:
        """What the result says that is fixed now (the journal's first record)."""
        request = self.request
        workload = request.workload
        header = ResultHeader(
            workload=request.name,
            driver=request.driver.name,
            message_size=workload.message_size,
            topics=workload.topics,
            partitions=workload.partitions_per_topic,
            producers_per_topic=workload.producers_per_topic,
            consumers_per_topic=workload.consumer_per_subscription,
            subscriptions_per_topic=workload.subscriptions_per_topic,
            tailing_subscriptions_per_topic=workload.tailing_subscriptions_per_topic,
        )
        options = request.options
        return RunStart(
            header,
            self.run_id,
            self.started_ms,
            self.setup,
            {f.name: getattr(options, f.name) for f in fields(options)},
            request.placement.describe(),
        )

    def checkpoint(self, destination: Destination | None) -> Checkpoint | None:
        """With a destination, the run's journal and hlogs there, appended as it goes."""
        if destination is None:
            return None
        name = result_name(self.request, self.started_ms)
        return Checkpoint(JournalWriter(name, self.facts()), destination)

    def landing(self) -> LandingFeed | None:
        """With ``--pipeline``, every interval landed for the Spark job."""
        pipeline_dir = self.request.options.pipeline_dir
        if pipeline_dir is None:
            return None
        spec = self.request.driver
        identity = RunIdentity(
            self.run_id, WORKER_ID, 1, self.request.name, spec.name, spec.kind, self.setup
        )
        return open_landing(Path(pipeline_dir), identity)


@contextlib.contextmanager
def _on_board(board: MetricsBoard | None, **labels: str) -> Iterator[None]:
    """The board shows one run, labelled ``labels``, as running for the block."""
    if board is None:
        yield
        return
    board.start_run(**labels)
    try:
        yield
    finally:
        board.end_run()


def fault_schedules(
    workload: Workload, spec: DriverSpec, env: Mapping[str, str]
) -> tuple[FaultSchedule, ...]:
    """The workload's faults, aimed at the nodes of the local broker the driver file points at
    (its targets checked now: a bad one is exit 2 before anything starts)."""
    if not workload.faults:
        return ()
    nodes = nodes_for(str(dict(spec.config)))
    check_targets(workload.faults, nodes)
    return (FaultSchedule(workload.faults, nodes, env),)


def execute(
    request: RunRequest, destination: Destination | None = None
) -> tuple[str, dict[str, Any], RunOutcome]:
    """Run ``request``: its name, the result document, the raw outcome.

    Never raises for a run cut short: the outcome says ``incomplete`` and the document has
    everything measured until then (and the pipeline, if any, gets the end marker all the same).
    The hooks run before anything is created and after the topics are gone; a failing
    ``before_run`` command raises :class:`~loadgen.running.hooks.HookFailed` and nothing is run.
    With an ``out_dir``, the run's journal and hlogs are appended there after every interval,
    under the name the final result will have (:mod:`loadgen.result_files.checkpoint`); the journal
    is left for :func:`run_one` to remove once the result is written. They go to
    ``destination`` (by default the ``out_dir`` and its fallbacks) when given.
    """
    if destination is None and request.out_dir is not None:
        destination = Destination(request.out_dir)
    run = _Run.start(request)
    stop.WATCH.on_phase("start", None)  # until setup: building payloads, hooks, workers
    request = run.request
    spec, workload = request.driver, request.workload
    payloads = build_payloads(workload, request.workload_path)
    env = hook_env(run.run_id, request.name, spec.name)
    schedules = fault_schedules(workload, spec, env)
    done_hooks = run_before(request.hooks, env)
    checkpoint, landing = run.checkpoint(destination), run.landing()
    kept = None if checkpoint is None else stop.UnlessStopped(checkpoint)
    # the board first: a scrape shows an interval before the caller's own listener gets it
    ours: list[RunListener | None] = [stop.WATCH, request.metrics, landing, kept]
    listeners = Listeners((*(one for one in ours if one is not None), *request.listeners))
    status = "failed"
    labels = {"run_id": run.run_id, "workload": request.name, "driver": spec.name}
    try:
        with (
            _on_board(request.metrics, **labels),
            open_worker(spec, workload, request.placement) as worker,
        ):
            outcome = run_workload(
                worker, workload, payloads, request.options, listeners, schedules
            )
            leaving = time.monotonic()
        stop.charge("workers", leaving)  # the worker processes' end
        status = "incomplete" if outcome.incomplete else "complete"
        if checkpoint is not None:  # after a signal, the wait draws on the stop budget
            with stop.step("journal"):
                checkpoint.finish(outcome.intervals, stop.left(FINISH_WAIT_S))
    finally:  # after_run undoes what before_run did, so it runs whenever before_run did
        done_hooks += run_after(request.hooks, {**env, "LOADGEN_RUN_STATUS": status})
        if checkpoint is not None:  # its writer thread ends with the run, also when it raises
            checkpoint.close()
    with stop.step("result"):
        result = result_document(run.facts(), outcome)
    if landing is not None:
        landing.end(
            outcome.intervals,
            incomplete=outcome.incomplete,
            stop_reason=outcome.stop_reason,
            faults=result.get("faults"),
        )
    if request.hooks:
        result["run"]["hooks"] = [redact(record.to_json()) for record in done_hooks]
    return request.name, result, outcome


def result_name(request: RunRequest, started_ms: int) -> str:
    """A run's result file name: OMB's ``<workload>-<driver>-<UTC time>.json``."""
    started = datetime.fromtimestamp(started_ms / 1000, UTC)
    return f"{result_stem(request.name, request.driver.name, started)}.json"


def result_path(out_dir: Path, request: RunRequest, started_ms: int) -> Path:
    """Where a run's result goes when ``out_dir`` takes it."""
    return out_dir / result_name(request, started_ms)


def run_one(request: RunRequest, last_resort: TextIO | None = None) -> SavedRun:
    """Run ``request`` and write the result into its ``out_dir``; raise RunAborted if cut short.

    The result file is written before RunAborted is raised, so nothing measured is lost; while
    the run goes, its journal holds every completed interval, and goes once the result is there.
    Where the ``out_dir`` fails, the files go to a fallback directory
    (:mod:`loadgen.result_files.destination`; the result's ``run.output`` says where and why); where
    every place fails, the result is printed as one line of JSON on ``last_resort`` (stdout by
    default) and the report's ``path`` is ``None``.
    """
    if request.out_dir is None:
        raise ValueError("run_one writes a result file: the request needs an out_dir")
    destination = Destination(request.out_dir)
    _, result, outcome = execute(request, destination)
    if stop.WATCH.stop is not None:  # how long the signal took to end the run, in here
        result["run"]["stop"] = stop.WATCH.stop.to_json()
    path = _keep(destination, result_name(request, outcome.started_ms), result, outcome)
    if path is None:
        print(json.dumps(result, allow_nan=False), file=last_resort or sys.stdout, flush=True)
    if outcome.incomplete:
        where = None if path is None else str(path)
        raise RunAborted(outcome.stop_reason or "error", outcome.stop_detail, where)
    return SavedRun(path, result, outcome)


def _keep(
    destination: Destination, name: str, result: dict[str, Any], outcome: RunOutcome
) -> Path | None:
    """Write the result and its hlogs where ``destination`` takes them (``None``: nowhere), and
    remove the run's journal, and what the places it left hold of it."""

    def write(directory: Path) -> Path:
        path = directory / name
        output = destination.record()
        if output is not None:
            result["run"]["output"] = output
        write_hlogs(path, outcome.intervals, outcome.started_ms)  # the drain changed the last line
        write_json_atomic(path, result)  # last: a result file stands beside its hlogs
        return path

    try:
        path = destination.write(write)
    except NoPlaceLeft:
        result["run"]["output"] = destination.record()
        return None
    for place in destination.visited:  # a part of the run's files, superseded
        for left in place.glob(f"{glob.escape(Path(name).stem)}.*"):
            with contextlib.suppress(OSError):  # the disk that failed may refuse this too
                left.unlink()
    journal_path(path).unlink(missing_ok=True)
    return path
