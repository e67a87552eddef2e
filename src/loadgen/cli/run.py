"""``loadgen run``: workloads against drivers, or one run from flags against a URL; and how
one run is shown, which sweep and matrix share (:func:`run_and_show`)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import click
from click.core import ParameterSource

from loadgen.base.cpus import pin
from loadgen.base.errors import ConfigError, LoadgenError, NoPlaceLeft, RunAborted, exit_code_for
from loadgen.base.writable import check_outputs
from loadgen.cli import options as opts
from loadgen.cli.options import Decorator, Output
from loadgen.cli.output import displaced, displaced_exit_code, write_displaced
from loadgen.distributed.placement import Placement
from loadgen.driver_api.driver_file import load_driver_spec
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.outcome import SavedRun
from loadgen.engine.stats import measured_intervals, merge_all
from loadgen.formats.intervals_csv import write_intervals_csv
from loadgen.formats.run_verdicts import drain_failed
from loadgen.metrics.board import MetricsBoard
from loadgen.metrics.endpoint import serving
from loadgen.report.console import (
    delivery_warning,
    format_catch_up,
    format_clock_correction,
    format_faults,
    format_outages,
    format_topic_scaling,
    format_transactions,
    format_verdicts,
    host_busy_note,
    unread_note,
)
from loadgen.report.display import display_for
from loadgen.report.shape import format_shape
from loadgen.running import adhoc, stop
from loadgen.running.hooks import RunHooks, describe_hook
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen.running.slo import format_checks, judge_saved_run
from loadgen.spec import KeyDistributor, Workload, load_workload
from loadgen.spec.faults import Fault, check_faults_within, faults_from_options


@contextlib.contextmanager
def embedded_kafka() -> Iterator[DriverSpec]:
    """The embedded default: Kafka's local broker (tansu), living exactly as long as the run."""
    from loadgen.local_brokers import launcher

    broker = launcher.start("kafka")
    click.echo(
        f"no -d given: started a local Kafka broker (tansu, Kafka-compatible) at "
        f"{broker.address} for this run; it is stopped when the run ends",
        err=True,
    )
    try:
        yield DriverSpec(name="Kafka", kind="kafka", config=broker.driver_config)
    finally:
        broker.stop()
        click.echo(f"stopped the local Kafka broker (tansu) at {broker.address}", err=True)


RUN_EXAMPLES = """\b
Examples:
  loadgen run configs/workloads/quickstart.yaml
      no -d: a local tansu (Kafka-compatible) broker runs for this run only
  loadgen run -d configs/drivers/kafka-local.yaml configs/workloads/quickstart.yaml \
      --duration 5m --warmup 1m --stats-interval 1s
  loadgen run kafka://127.0.0.1:9092 --rate 10k --size 1KiB --duration 30s
  loadgen run -d kafka.yaml workload.yaml --processes 4 --slo 'e2e.p99<20ms'
  loadgen run -d kafka.yaml workload.yaml --workers http://client-1:8080,http://client-2:8080
"""


def url_flags(
    rate: float | None,
    size: int | None,
    topics: int | None,
    partitions: int | None,
    producers: int | None,
    subscriptions: int | None,
    consumers: int | None,
    key_distributor: str | None,
) -> dict[str, object]:
    """A URL run's workload fields, by the flag that gives each
    (:func:`loadgen.running.adhoc.plan`)."""
    return {
        "--rate": rate,
        "--size": size,
        "--topics": topics,
        "--partitions": partitions,
        "--producers": producers,
        "--subscriptions": subscriptions,
        "--consumers": consumers,
        "--key-distributor": key_distributor,
    }


def _count(name: str, least: int, field_name: str) -> Decorator:
    return click.option(
        f"--{name}",
        metavar="N",
        type=click.IntRange(min=least),
        help=f"URL runs: {field_name} [1].",
    )


URL_FLAGS = (
    click.option(
        "--rate",
        metavar="RATE",
        callback=opts.rate,
        help="URL runs: producerRate, msg/s (10k, 1.5M) [1k].",
    ),
    click.option(
        "--size",
        metavar="SIZE",
        callback=opts.size,
        help="URL runs: messageSize (512, 4KiB, 1MiB) [1KiB].",
    ),
    _count("topics", 1, "topics"),
    _count("partitions", 1, "partitionsPerTopic"),
    _count("producers", 0, "producersPerTopic"),
    _count("subscriptions", 0, "subscriptionsPerTopic"),
    _count("consumers", 0, "consumerPerSubscription"),
    click.option(
        "--key-distributor",
        type=click.Choice([key.value for key in KeyDistributor]),
        help="URL runs: keyDistributor [NO_KEY].",
    ),
)
FAULT_STATS_INTERVAL_S = 1.0
"""Runs with faults report 1-s intervals unless --stats-interval says otherwise."""

RUN_OPTIONS = (
    *opts.lengths(url_runs=True),
    opts.STATS_INTERVAL,
    click.option("--keep-topics", is_flag=True, help="Do not delete the topics after the run."),
    click.option(
        "--existing-topics",
        metavar="NAME,...",
        default=None,
        help="Use these topics (NAME,NAME,...; one per workload topic; created if absent, never "
        "deleted) instead of fresh ones. With producersPerTopic: 0, a consumer-only run reads "
        "them.",
    ),
    opts.timeout(
        "--catch-up-timeout",
        "10m",
        "Catch-up runs: the longest the backlog may take to build, and then to drain.",
    ),
    click.option(
        "--backlog-drain-timeout",
        metavar="DURATION|forever",
        callback=opts.backlog_drain_timeout,
        default=None,
        help="Catch-up runs: the longest the backlog may take to drain [the workload's "
        "backlogDrainTimeout, else --catch-up-timeout]. A drain whose backlog does not shrink "
        "for 3 stats intervals (at least 5 s) stops sooner; either way the run ends there and "
        "exits 1. `forever` waits as OMB does, stalled or not.",
    ),
    opts.timeout(
        "--drain-timeout",
        "10s",
        "How long the end of the run waits for messages in flight to be acknowledged and received.",
    ),
    click.option(
        "--pipeline",
        "pipeline_dir",
        metavar="DIR",
        type=click.Path(path_type=Path),
        default=None,
        help="Also land every interval in DIR for `loadgen pipeline ingest` (Spark).",
    ),
)
RUN_OUTPUT = (
    opts.OUT_DIR,
    opts.quiet("Only the closing aggregate, no live view."),
    opts.PLAIN,
    click.option(
        "--json-lines",
        is_flag=True,
        help="One JSON object per phase, interval and run summary on stdout, for programs.",
    ),
    opts.no_report("Do not write the HTML report beside the result."),
    opts.SLO,
    click.option(
        "--csv",
        "csv_path",
        metavar="FILE",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Also write FILE: one row per stats interval (warm-up too) and a summary row.",
    ),
)
PLACEMENT = (opts.WORKERS, opts.WORKERS_WAIT, opts.PROCESSES, opts.SPLIT, opts.TOKEN, opts.CPUS)


def serve_metrics(
    stack: contextlib.ExitStack, metrics: tuple[str, int] | None, token: str | None
) -> MetricsBoard | None:
    """The coordinator's board, served at ``metrics`` for as long as ``stack`` lives, or
    ``None`` when ``--metrics-port`` is off. Call it before a broker starts: a port in use
    fails the command at once."""
    if metrics is None:
        return None
    board = MetricsBoard(role="coordinator", worker="all")
    served = stack.enter_context(serving(board, *metrics, token))
    click.echo(f"metrics: {served}", err=True)
    return board


def slo_exit(output: Output) -> None:
    """Exit 1 naming the runs that missed a --slo threshold or whose catch-up drain did not
    come (after every run was made); else
    5 or 6 when files could not be written where asked (see loadgen.base.errors)."""
    if output.drain_failed:
        click.echo(f"drain: {len(output.drain_failed)} run(s) could not drain", err=True)
    if output.slo_failed:
        click.echo(f"slo: {len(output.slo_failed)} run(s) missed a threshold", err=True)
    if output.slo_failed or output.drain_failed:
        sys.exit(1)
    if output.displaced:
        sys.exit(displaced_exit_code(output.displaced))


@click.command(epilog=RUN_EXAMPLES)
@click.argument("workloads", metavar="WORKLOAD... | URL", nargs=-1, required=True)
@opts.driver_file(
    "drivers",
    "Driver YAML (repeatable). Without it, a local tansu (Kafka-compatible) broker is "
    "started for the run and stopped after it. With a URL: one file of client settings (the "
    "URL's address wins).",
    multiple=True,
)
@opts.grouped("output", opts.output, *RUN_OUTPUT)
@opts.grouped("options", opts.run_options, *RUN_OPTIONS)
@opts.grouped("given", url_flags, *URL_FLAGS)
@click.option(
    "--dry-run",
    is_flag=True,
    help="URL runs: print the workload and driver files (secrets redacted) and run nothing.",
)
@click.option(
    "--fault",
    "faults",
    metavar="'at=20s action=kill target=broker:2 for=15s'",
    multiple=True,
    help="A fault made during the measured phase (repeatable; the keys of the workload's "
    "faults: at, action, target, for, command, undo), after the workload's own. With faults, "
    "--stats-interval is 1s unless given.",
)
@opts.LENIENT
@opts.grouped("placement", opts.placement, *PLACEMENT)
@opts.grouped("hooks", opts.hooks, *opts.HOOKS)
@opts.METRICS
def run(
    workloads: tuple[str, ...],
    drivers: tuple[Path, ...],
    output: Output,
    options: RunOptions,
    given: dict[str, object],
    dry_run: bool,
    faults: tuple[str, ...],
    lenient: bool,
    placement: Placement,
    hooks: RunHooks,
    metrics: tuple[str, int] | None,
) -> None:
    """Run each WORKLOAD against each driver, in order, as OMB does; or one run from flags
    against a broker URL (kafka://, amqp(s)://, pulsar(+ssl)://, tcp:// or tls:// for Pravega,
    a plug-in driver's scheme).

    A failed run is reported and the next one starts (OMB's behaviour); the exit code is the
    worst one seen (exit 1 when a run missed a --slo threshold). Ctrl-C ends the whole
    sequence after writing the partial result.
    """
    durations = {"--duration": options.duration_s, "--warmup": options.warmup_s}
    from_url = adhoc.plan(workloads, drivers, {**given, **durations}, dry_run)
    if from_url is not None and dry_run:
        click.echo(adhoc.as_yaml(*from_url), nl=False)
        return
    if output.csv is not None and len(workloads) * max(len(drivers), 1) > 1:
        raise ConfigError(
            "one CSV file holds one run",
            path="--csv",
            value=str(output.csv),
            allowed="one WORKLOAD and at most one -d",
        )
    if from_url is None:
        loaded = [(Path(path), load_workload(path, lenient=lenient)) for path in workloads]
        specs = [load_driver_spec(path, lenient=lenient) for path in drivers]
    else:
        loaded, specs = [(Path(str(from_url[0].name)), from_url[0])], [from_url[1]]
    added = faults_from_options(faults)
    loaded = [(path, with_faults(workload, added)) for path, workload in loaded]
    interval_given = click.get_current_context().get_parameter_source("stats_interval")
    pipeline_dir = options.pipeline_dir
    check_outputs(
        {
            "-o/--out": output.out_dir,
            "--pipeline": None if pipeline_dir is None else Path(pipeline_dir),
            "--csv": None if output.csv is None else output.csv.parent,
        }
    )
    with stop.handling(), contextlib.ExitStack() as stack:
        board = serve_metrics(stack, metrics, placement.token)
        if not specs:
            specs = [stack.enter_context(embedded_kafka())]
        if placement.cpus:
            pin(frozenset(placement.cpus))  # after the embedded broker: it must not inherit it
        requests = [
            RunRequest(
                workload,
                spec,
                fault_interval(options, workload, interval_given),
                workload_path=path,
                out_dir=output.out_dir,
                placement=placement,
                hooks=hooks,
                metrics=board,
            )
            for path, workload in loaded
            for spec in specs
        ]
        worst = _run_each(requests, output)
    if worst:
        sys.exit(worst)
    slo_exit(output)


def with_faults(workload: Workload, added: tuple[Fault, ...]) -> Workload:
    """``workload`` with the --fault faults after its own, checked against its duration."""
    if not added:
        return workload
    faults = (*workload.faults, *added)
    check_faults_within(faults, workload.test_duration_s)
    return workload.model_copy(update={"faults": faults})


def fault_interval(
    options: RunOptions, workload: Workload, given: ParameterSource | None
) -> RunOptions:
    """1-s stats intervals for a run with faults, unless --stats-interval was given: the
    figures around a fault are as fine as its intervals."""
    if not workload.faults or given not in (ParameterSource.DEFAULT, None):
        return options
    return replace(options, stats_interval_s=FAULT_STATS_INTERVAL_S)


def _run_each(requests: list[RunRequest], output: Output) -> int:
    """Run each request in turn: the worst exit code of the failed ones (OMB goes on after a
    failed run); a single run's error, or Ctrl-C, is raised."""
    worst = 0
    for request in requests:
        try:
            run_and_show(request, output)
        except LoadgenError as error:
            interrupted = isinstance(error, RunAborted) and error.reason == "interrupted"
            if len(requests) == 1 or interrupted:
                raise
            click.echo(f"error: {error}", err=True)
            worst = max(worst, exit_code_for(error))
    return worst


def run_and_show(request: RunRequest, output: Output) -> SavedRun:
    """Run ``request`` with the live display chosen, then say what it wrote and found."""
    stop.refuse_after_signal()
    spec, workload = request.driver, request.workload
    title = f"{request.name} on {spec.name} ({spec.kind})"
    click.echo(f"== {title}", err=True)
    spare = "stderr" if output.display == "json-lines" else "stdout"  # the last resort
    stream = sys.stderr if spare == "stderr" else sys.stdout
    with display_for(output.display, title) as display:
        shown = replace(request, listeners=(*request.listeners, display))
        try:
            saved = run_one(shown, stream)
        except RunAborted as aborted:
            display.finish(None, aborted.result_path)
            if aborted.result_path is None:
                click.echo(f"result: printed as one line of JSON on {spare}", err=True)
            _files_written(aborted.result_path, output)
            raise
        measured = measured_intervals(saved.outcome.intervals)
        where = None if saved.path is None else str(saved.path)
        display.finish(merge_all(measured) if measured else None, where)
    displaced(saved.result["run"].get("output"), output)
    if saved.path is None:
        click.echo(f"result: printed as one line of JSON on {spare} instead", err=True)
    _notes(saved.result, output)
    if drain_failed(saved.result):
        output.drain_failed.append(str(saved.path))
    if output.slo:
        checks = judge_saved_run(saved, workload, output.slo)
        click.echo(format_checks(checks), err=True)
        if not all(check.passed for check in checks):
            output.slo_failed.append(str(saved.path))
    if output.csv is not None:
        _write_csv(output.csv, saved, workload.subscriptions_per_topic, output)
    _files_written(where, output)
    return saved


def _write_csv(asked: Path, saved: SavedRun, subscriptions: int, output: Output) -> None:
    """The --csv file, in its directory or a fallback one; never a reason to stop."""
    try:
        written = write_displaced(
            asked.parent,
            lambda directory: write_intervals_csv(
                directory / asked.name,
                saved.outcome.intervals,
                subscriptions,
                saved.result.get("verdicts"),
                saved.result.get("faults", ()),
            ),
            output,
        )
    except NoPlaceLeft as error:
        click.echo(f"warning: the CSV was not written: {error}", err=True)
        return
    click.echo(f"csv: {written}", err=True)


def _notes(result: dict, output: Output) -> None:
    """What a finished run's result says beyond its numbers: hooks, shape, clocks, outages,
    a busy host."""
    for record in result["run"].get("hooks", ()):
        click.echo(f"hook: {describe_hook(record)}", err=True)
    for note in (
        format_shape(result),
        format_clock_correction(result),
        delivery_warning(result),
        unread_note(result),
        format_transactions(result),
        format_topic_scaling(result),
        format_faults(result),
        format_outages(result.get("outages")),
        host_busy_note(result),
    ):
        if note is not None:
            click.echo(note, err=True)
    if "catchUp" in result and output.display != "json-lines":
        click.echo(format_catch_up(result["catchUp"]), err=True)
    _discovered_rate(result)
    verdicts = format_verdicts(result)
    if verdicts is not None:
        click.echo(verdicts, err=True)


def _discovered_rate(result: dict) -> None:
    """Rate discovery's outcome, which OMB only logs: the last rate and how it got there."""
    discovery = result.get("rateDiscovery")
    if discovery is None:
        return
    steps = " -> ".join(f"{change['rate']:,.0f}" for change in discovery["history"][-6:])
    click.echo(
        f"rate discovery: {discovery['finalRate']:,.0f} msg/s at the end "
        f"({len(discovery['history']) - 1} adjustments; last rates {steps})",
        err=True,
    )


def _files_written(result: str | None, output: Output) -> None:
    """Name the result and write its HTML report beside it (partial results too)."""
    if result is None:
        return
    click.echo(f"result: {result}", err=True)
    if not output.report:
        return
    if stop.WATCH.stop is not None:  # drawing charts would spend the stop budget twice over
        click.echo(
            f"report: not written after a signal; to write it: loadgen report {result}", err=True
        )
        return
    from loadgen.report import html  # matplotlib: imported only when a report is written

    name = Path(result).with_suffix(".html").name
    try:
        target = write_displaced(
            Path(result).parent,
            lambda directory: html.write_report([Path(result)], directory / name),
            output,
        )
    except Exception as error:  # the result is safe on disk; a report bug must not hide it
        click.echo(f"warning: the report was not written: {error!r}", err=True)
        return
    click.echo(f"report: {target}", err=True)
