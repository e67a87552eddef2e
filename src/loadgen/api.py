"""loadgen from Python: build a workload and a driver config, run it, get a :class:`Result`.

The same validation as the YAML files (a bad field is a :class:`~loadgen.base.errors.ConfigError`
naming it and what is allowed), the same engine and the same result document as ``loadgen run``;
nothing is printed and nothing is written unless :meth:`Result.save` is called.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from loadgen.base.errors import ConfigError, RunAborted
from loadgen.distributed.placement import Placement
from loadgen.driver_api import load_driver_class
from loadgen.driver_api.driver_file import load_driver_spec
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.local.process import LocalBroker
from loadgen.engine.listeners import OnInterval
from loadgen.engine.stats import IntervalStats
from loadgen.metrics.board import MetricsBoard
from loadgen.metrics.endpoint import DEFAULT_HOST as DEFAULT_METRICS_HOST
from loadgen.metrics.endpoint import serving
from loadgen.running.hooks import DEFAULT_TIMEOUT_S, make_hooks
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.result import Result, build_result
from loadgen.running.runner import execute
from loadgen.spec import Workload, load_workload, parse_duration, parse_model

PYTHON_SOURCE = "<python>"
Duration = float | str
"""Seconds, or a duration text as on the command line: ``"5s"``, ``"1m30s"``."""


def workload(**fields: Any) -> Workload:
    """A workload from OMB's field names (``producerRate=``) or the snake_case ones."""
    return parse_model(Workload, fields, file=PYTHON_SOURCE)


def driver(kind: str, name: str | None = None, **config: Any) -> DriverSpec:
    """A driver config (the fields of that driver's YAML), checked by the driver itself."""
    spec = DriverSpec(name=name or kind, kind=kind, config=config, source=PYTHON_SOURCE)
    load_driver_class(spec).validate_config(spec)
    return spec


def _as_workload(value: Workload | Mapping[str, Any] | str | Path) -> tuple[Workload, Path | None]:
    if isinstance(value, Workload):
        return value, None
    if isinstance(value, Mapping):
        return workload(**value), None
    return load_workload(value), Path(value)


def _as_driver(value: DriverSpec | LocalBroker | str | Path) -> DriverSpec:
    if isinstance(value, DriverSpec):
        return value
    if isinstance(value, LocalBroker):
        return driver(value.kind, name=f"{value.kind} at {value.address}", **value.driver_config)
    return load_driver_spec(value)


def _seconds(value: Duration | None, option: str) -> float | None:
    if value is None or isinstance(value, int | float):
        return value
    return parse_duration(value, option=option)


def _options(
    duration: Duration | None,
    warmup: Duration | None,
    stats_interval: Duration,
    keep_topics: bool,
    pipeline: str | Path | None,
) -> RunOptions:
    interval = _seconds(stats_interval, "stats_interval")
    if interval is None or interval < 1:
        raise ConfigError(
            "the stats interval must be at least 1 s",
            path="stats_interval",
            value=stats_interval,
            allowed="≥ 1 s",
        )
    return RunOptions(
        duration_s=_seconds(duration, "duration"),
        warmup_s=_seconds(warmup, "warmup"),
        stats_interval_s=interval,
        keep_topics=keep_topics,
        pipeline_dir=None if pipeline is None else str(pipeline),
    )


def run(
    workload: Workload | Mapping[str, Any] | str | Path,
    driver: DriverSpec | LocalBroker | str | Path,
    *,
    duration: Duration | None = None,
    warmup: Duration | None = None,
    stats_interval: Duration = 1.0,
    keep_topics: bool = False,
    on_interval: Callable[[IntervalStats, int], None] | None = None,
    pipeline: str | Path | None = None,
    processes: int = 1,
    workers: Sequence[str] = (),
    token: str | None = None,
    before_run: Sequence[str] = (),
    after_run: Sequence[str] = (),
    hook_timeout: Duration = DEFAULT_TIMEOUT_S,
    metrics_port: int | None = None,
    metrics_host: str = DEFAULT_METRICS_HOST,
) -> Result:
    r"""Run one workload against one broker and return what was measured.

    ``workload`` and ``driver`` may be objects built here, mappings of YAML fields, paths to
    YAML files, or (for ``driver``) a :class:`~loadgen.driver_api.local.process.LocalBroker`.
    ``duration``/``warmup`` override the workload's minutes. A run cut short (a broker error
    mid-run, Ctrl-C) raises :class:`~loadgen.base.errors.RunAborted` whose ``partial`` attribute
    holds the Result of what was measured. ``pipeline`` lands every interval in that directory
    for ``loadgen pipeline ingest``, as ``loadgen run --pipeline`` does. ``processes`` > 1
    or ``workers`` (URLs of ``loadgen worker``\ s, with their ``token``) split the run as
    ``loadgen run --processes/--workers`` do; by default it runs in this process.
    ``before_run``/``after_run`` are shell commands run around it as ``--before-run`` and
    ``--after-run`` run them; a failing ``before_run`` raises
    :class:`~loadgen.running.hooks.HookFailed` and nothing is started.
    ``metrics_port`` serves the run's figures in Prometheus' format while it runs, as
    ``loadgen run --metrics-port`` does (port 0: any free one, logged by ``loadgen.metrics``).
    """
    chosen, path = _as_workload(workload)
    spec = _as_driver(driver)
    timeout = _seconds(hook_timeout, "hook_timeout")
    request = RunRequest(
        chosen,
        spec,
        _options(duration, warmup, stats_interval, keep_topics, pipeline),
        workload_path=path,
        placement=Placement(workers=tuple(workers), processes=processes, token=token),
        hooks=make_hooks(
            before_run, after_run, timeout or 0, ("before_run", "after_run", "hook_timeout")
        ),
        listeners=() if on_interval is None else (OnInterval(on_interval),),
        metrics=None if metrics_port is None else MetricsBoard(role="coordinator", worker="all"),
    )
    with contextlib.ExitStack() as stack:
        if request.metrics is not None:
            stack.enter_context(serving(request.metrics, metrics_host, metrics_port, token))
        name, document, outcome = execute(request)
    result = build_result(
        name,
        spec.name,
        chosen.subscriptions_per_topic,
        outcome.intervals,
        document,
        outcome.phase_seconds,
    )
    if outcome.incomplete:
        aborted = RunAborted(outcome.stop_reason or "error", outcome.stop_detail)
        aborted.partial = result
        raise aborted
    return result


async def arun(
    workload: Workload | Mapping[str, Any] | str | Path,
    driver: DriverSpec | LocalBroker | str | Path,
    **options: Any,
) -> Result:
    """:func:`run` in a worker thread, for async test suites and services.

    The engine runs on threads of its own; awaiting this keeps the event loop free. Cancelling
    the await does not stop the run early: it ends when its duration is over.
    """
    return await asyncio.to_thread(run, workload, driver, **options)
