"""The ``loadgen`` command. Errors map to exit codes here and nowhere else (see
loadgen.base.errors)."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import click

import loadgen.base.version
from loadgen.base import calibration
from loadgen.base.cpus import pin, usable_cpus
from loadgen.base.errors import ConfigError, LoadgenError, NoPlaceLeft, RunAborted, exit_code_for
from loadgen.base.files import all_or_none, result_stem, write_json_atomic
from loadgen.base.writable import check_outputs
from loadgen.cli import options as opts
from loadgen.cli.env import read_from_environment
from loadgen.cli.options import Decorator, Output
from loadgen.cli.output import displaced, displaced_exit_code, write_displaced
from loadgen.cli.pipeline import pipeline
from loadgen.distributed.placement import Placement
from loadgen.distributed.server import DEFAULT_MAX_BODY_BYTES, serve
from loadgen.distributed.spawn import ANNOUNCEMENT, TOKEN_ENV
from loadgen.driver_api import driver_classes
from loadgen.driver_api.driver_file import load_driver_spec
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.validation import validate_file
from loadgen.engine.outcome import RunReport
from loadgen.engine.stats import IntervalStats, measured_intervals, merge_all
from loadgen.formats.intervals_csv import write_intervals_csv
from loadgen.formats.run_verdicts import drain_failed
from loadgen.metrics.board import MetricsBoard
from loadgen.metrics.endpoint import serving
from loadgen.report.console import (
    delivery_warning,
    format_catch_up,
    format_clock_correction,
    format_outages,
    format_verdicts,
    host_busy_note,
    unread_note,
)
from loadgen.report.display import display_for
from loadgen.report.shape import format_shape
from loadgen.running import adhoc, stop
from loadgen.running.hooks import RunHooks, describe_hook, make_hooks
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen.running.thresholds import parse_all
from loadgen.running.verdict import format_checks, judge_report
from loadgen.spec import KeyDistributor, load_workload
from loadgen.studies import matrix, sweep

log = logging.getLogger("loadgen")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(loadgen.base.version.__version__, prog_name="loadgen")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def cli(verbose: int) -> None:
    """Load generation for message brokers, OMB-compatible in and out."""
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


@contextlib.contextmanager
def _embedded_kafka() -> Iterator[DriverSpec]:
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


LENIENT = click.option(
    "--lenient",
    is_flag=True,
    help="Ignore unknown YAML keys with a warning (OMB behaviour) instead of failing.",
)
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
RUN_OPTIONS = (
    opts.DURATION,
    opts.WARMUP,
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
STUDY_PLACEMENT = (opts.WORKERS, opts.WORKERS_WAIT, opts.PROCESSES, opts.TOKEN)
"""A sweep or a matrix: where its runs go (no --split or --cpus: each run is a plain run)."""


def _slo_exit(output: Output) -> None:
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


@cli.command(epilog=RUN_EXAMPLES)
@click.argument("workloads", metavar="WORKLOAD... | URL", nargs=-1, required=True)
@click.option(
    "-d",
    "--driver",
    "drivers",
    metavar="DRIVER.yaml",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Driver YAML (repeatable). Without it, a local tansu (Kafka-compatible) broker is "
    "started for the run and stopped after it. With a URL: one file of client settings (the "
    "URL's address wins).",
)
@opts.grouped("output", opts.output, *RUN_OUTPUT)
@opts.grouped("options", opts.run_options, *RUN_OPTIONS)
@opts.grouped("given", url_flags, *URL_FLAGS)
@click.option(
    "--dry-run",
    is_flag=True,
    help="URL runs: print the workload and driver files (secrets redacted) and run nothing.",
)
@LENIENT
@opts.grouped("placement", opts.placement, *PLACEMENT)
@opts.grouped("hooks", opts.hooks, *opts.HOOKS)
@opts.grouped("metrics", opts.metrics_address, *opts.METRICS)
def run(
    workloads: tuple[str, ...],
    drivers: tuple[Path, ...],
    output: Output,
    options: RunOptions,
    given: dict[str, object],
    dry_run: bool,
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
    board = None if metrics is None else MetricsBoard(role="coordinator", worker="all")
    if from_url is None:
        loaded = [(Path(path), load_workload(path, lenient=lenient)) for path in workloads]
        specs = [load_driver_spec(path, lenient=lenient) for path in drivers]
    else:
        loaded, specs = [(Path(str(from_url[0].name)), from_url[0])], [from_url[1]]
    pipeline_dir = options.pipeline_dir
    check_outputs(
        {
            "-o/--out": output.out_dir,
            "--pipeline": None if pipeline_dir is None else Path(pipeline_dir),
            "--csv": None if output.csv is None else output.csv.parent,
        }
    )
    with stop.handling(), contextlib.ExitStack() as stack:
        if board is not None and metrics is not None:  # before a broker starts: fail fast
            served = stack.enter_context(serving(board, *metrics, placement.token))
            click.echo(f"metrics: {served}", err=True)
        if not specs:
            specs = [stack.enter_context(_embedded_kafka())]
        if placement.cpus:
            pin(frozenset(placement.cpus))  # after the embedded broker: it must not inherit it
        requests = [
            RunRequest(
                workload,
                spec,
                options,
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
    _slo_exit(output)


def _run_each(requests: list[RunRequest], output: Output) -> int:
    """Run each request in turn: the worst exit code of the failed ones (OMB goes on after a
    failed run); a single run's error, or Ctrl-C, is raised."""
    worst = 0
    for request in requests:
        try:
            _run_and_show(request, output)
        except LoadgenError as error:
            interrupted = isinstance(error, RunAborted) and error.reason == "interrupted"
            if len(requests) == 1 or interrupted:
                raise
            click.echo(f"error: {error}", err=True)
            worst = max(worst, exit_code_for(error))
    return worst


def _run_and_show(request: RunRequest, output: Output) -> RunReport:
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
            report = run_one(shown, stream)
        except RunAborted as aborted:
            display.finish(None, aborted.result_path)
            if aborted.result_path is None:
                click.echo(f"result: printed as one line of JSON on {spare}", err=True)
            _files_written(aborted.result_path, output)
            raise
        measured = measured_intervals(report.outcome.intervals)
        where = None if report.path is None else str(report.path)
        display.finish(merge_all(measured) if measured else None, where)
    displaced(report.result["run"].get("output"), output)
    if report.path is None:
        click.echo(f"result: printed as one line of JSON on {spare} instead", err=True)
    _notes(report.result, output)
    if drain_failed(report.result):
        output.drain_failed.append(str(report.path))
    if output.slo:
        checks = judge_report(report, workload, output.slo)
        click.echo(format_checks(checks), err=True)
        if not all(check.passed for check in checks):
            output.slo_failed.append(str(report.path))
    if output.csv is not None:
        _write_csv(output.csv, report, workload.subscriptions_per_topic, output)
    _files_written(where, output)
    return report


def _write_csv(asked: Path, report: RunReport, subscriptions: int, output: Output) -> None:
    """The --csv file, in its directory or a fallback one; never a reason to stop."""
    try:
        written = write_displaced(
            asked.parent,
            lambda directory: write_intervals_csv(
                directory / asked.name,
                report.outcome.intervals,
                subscriptions,
                report.result.get("verdicts"),
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


SWEEP_EXAMPLES = """\b
Examples:
  loadgen sweep -d kafka.yaml workload.yaml --rates 10k,50k,100k --duration 1m
  loadgen sweep -d kafka.yaml workload.yaml --rates 10k:100k:10
  loadgen sweep -d kafka.yaml workload.yaml --slo-p99 20 --search 10k:1M --max-runs 7
      (--rates runs the rates listed; --search bounds an --slo-p99 search: not both)
"""
PROBE_EXAMPLES = """\b
Examples:
  loadgen probe kafka://127.0.0.1:9092
  loadgen probe pulsar://127.0.0.1:6650 --rate 1k --duration 30s --max-p99 20
  loadgen probe amqp://guest:guest@127.0.0.1:5672/ --json --slo 'e2e.p99.9<50ms'
  loadgen probe kafka+ssl://broker:9093 -d kafka-sasl.yaml --topic probe
"""
WORKER_EXAMPLES = """\b
Examples:
  loadgen worker --bind 127.0.0.1:8080
  LOADGEN_TOKEN=secret loadgen worker --bind 0.0.0.0:8080 --metrics-port 9100
      then, on the coordinator: loadgen run --workers http://HOST:8080 --token ...
"""
MATRIX_EXAMPLES = """\b
Examples:
  loadgen matrix plan.yaml --dry-run
  loadgen matrix plan.yaml -o results/matrix --repeat 3 --duration 2m
  loadgen matrix plan.yaml --group-by driver,messageSize
"""
STUDY_RUN = (opts.DURATION, opts.WARMUP, opts.STATS_INTERVAL)


def _study_output(help_quiet: str, help_no_report: str) -> tuple[Decorator, ...]:
    return (
        opts.OUT_DIR,
        opts.quiet(help_quiet),
        opts.PLAIN,
        opts.no_report(help_no_report),
        opts.SLO,
    )


@cli.command("sweep", epilog=SWEEP_EXAMPLES)
@click.argument("workload_path", metavar="WORKLOAD", type=click.Path(path_type=Path))
@click.option(
    "-d",
    "--driver",
    metavar="DRIVER.yaml",
    type=click.Path(path_type=Path),
    help="Driver YAML. Without it, a local tansu (Kafka-compatible) broker is started.",
)
@click.option(
    "--rates",
    metavar="RATE,...",
    help="Rates to run: 1k,5k,10k or START:STOP:COUNT (evenly spaced).",
)
@click.option(
    "--slo-p99",
    metavar="MS",
    type=click.FloatRange(min=0, min_open=True),
    help="Instead of --rates, find the highest rate whose p99 (ms) stays at or under this.",
)
@click.option(
    "--slo-metric",
    type=click.Choice(sorted(sweep.METRICS)),
    default="e2e",
    show_default=True,
    help="The latency the SLO bounds.",
)
@click.option(
    "--search",
    "search_range",
    metavar="RATE:RATE",
    help="The SLO search's rates: LOW:HIGH (10k:1M).",
)
@click.option(
    "--max-runs",
    metavar="N",
    type=click.IntRange(min=2),
    default=7,
    show_default=True,
    help="Most runs an SLO search makes (the two ends included).",
)
@click.option(
    "--tolerance",
    type=click.FloatRange(min=0, min_open=True),
    default=0.05,
    show_default=True,
    help="An SLO search stops when the lowest failing rate is within this of the highest passing.",
)
@opts.grouped("options", opts.run_options, *STUDY_RUN)
@LENIENT
@opts.grouped(
    "output",
    opts.output,
    *_study_output(
        "Only each run's closing aggregate.", "No HTML reports (per run and for the sweep)."
    ),
)
@opts.grouped("placement", opts.placement, *STUDY_PLACEMENT)
@opts.grouped("hooks", opts.hooks, *opts.HOOKS)
def sweep_command(
    workload_path: Path,
    driver: Path | None,
    rates: str | None,
    slo_p99: float | None,
    slo_metric: str,
    search_range: str | None,
    max_runs: int,
    tolerance: float,
    options: RunOptions,
    lenient: bool,
    output: Output,
    placement: Placement,
    hooks: RunHooks,
) -> None:
    """Run WORKLOAD at several rates (--rates), or search for the highest rate that meets a
    p99 bound (--slo-p99 with --search LOW:HIGH), and write a rate-vs-latency table and chart.

    Each run writes its own result, as `loadgen run` does; the summary
    `<workload>-sweep-<driver>-<time>.json` (and `.html`) lists them. An SLO search that finds
    no rate exits 1; so does a run that misses a --slo threshold (each run is judged).
    """
    _one_study(rates, slo_p99, search_range)
    planned = sweep.parse_rates(rates, "--rates") if rates is not None else None
    bounds = None if search_range is None else sweep.parse_search(search_range, "--search")
    workload = load_workload(workload_path, lenient=lenient)
    if slo_metric == "e2e" and slo_p99 is not None and workload.subscriptions_per_topic == 0:
        raise ConfigError(
            "an e2e SLO needs consumers",
            file=str(workload_path),
            path="subscriptionsPerTopic",
            value=0,
            allowed="at least 1, or --slo-metric publish",
        )
    check_outputs({"-o/--out": output.out_dir})
    with stop.handling(), contextlib.ExitStack() as stack:
        spec = (
            load_driver_spec(driver, lenient=lenient)
            if driver is not None
            else stack.enter_context(_embedded_kafka())
        )
        # one process count for every step, sized for the highest rate: the steps compare
        top = max(planned) if planned is not None else bounds[1]
        placement = placement.sized(spec, sweep.at_rate(workload, top))
        base = RunRequest(workload, spec, options, workload_path, output.out_dir, placement, hooks)

        taken: list[sweep.SweepPoint] = []

        def measure(rate: float) -> sweep.SweepPoint:
            try:
                point = sweep.measure_point(
                    workload, rate, lambda at: _run_and_show(replace(base, workload=at), output)
                )
            except RunAborted as aborted:  # a signal: the run's partial result is a point too
                if aborted.result_path is not None:
                    taken.append(sweep.partial_point(rate, aborted.result_path))
                raise
            taken.append(point)
            return point

        found = None
        try:
            if planned is not None:
                points = [measure(rate) for rate in planned]
            else:
                slo = sweep.Slo(slo_metric, slo_p99)
                found = sweep.search(measure, slo, *bounds, max_runs, tolerance)
                points = found.points
        except (RunAborted, KeyboardInterrupt):
            _stopped_sweep(base, taken, output)
            raise
    _sweep_summary(base, points, found, output)
    if found is not None and found.highest_rate is None:
        sys.exit(1)
    _slo_exit(output)


def _one_study(rates: str | None, slo_p99: float | None, search_range: str | None) -> None:
    """A sweep runs --rates, or searches (--slo-p99 with --search): never both, never half."""
    if rates is not None and search_range is not None:
        raise ConfigError(
            "--rates lists the rates to run, --search the range an SLO search explores: choose one",
            path="--rates --search",
            value=f"{rates} {search_range}",
            allowed="--rates alone, or --slo-p99 with --search",
        )
    if (rates is None) == (slo_p99 is None):
        raise ConfigError(
            "give either --rates (a sweep) or --slo-p99 (an SLO search)",
            path="--rates/--slo-p99",
            allowed="exactly one of them",
        )
    if slo_p99 is not None and search_range is None:
        raise ConfigError(
            "an SLO search needs the rates to search between",
            path="--search",
            allowed="LOW:HIGH, e.g. 10k:1M",
        )


def _sweep_summary(
    base: RunRequest,
    points: list[sweep.SweepPoint],
    found: sweep.Search | None,
    output: Output,
) -> None:
    """The sweep's own document (and chart), listing every run's result."""
    from loadgen.report import sweep as sweep_report  # matplotlib: only when a sweep ran

    summary = sweep.sweep_document(base.name, base.driver.name, points, found)
    name = _sweep_name(base)

    def write(directory: Path) -> Path:
        target = directory / name
        with all_or_none() as written:
            write_json_atomic(target, summary)
            written.append(target)
            if output.report:
                sweep_report.write_html(summary, target.with_suffix(".html"))
        return target

    click.echo(sweep_report.table_text(summary))  # first: it is shown whatever the disk does
    target = write_displaced(output.out_dir, write, output)
    click.echo(f"sweep: {target}", err=True)
    if output.report:
        click.echo(f"report: {target.with_suffix('.html')}", err=True)


def _sweep_name(base: RunRequest) -> str:
    """The sweep document's file name: OMB's result pattern with ``-sweep`` after the workload."""
    return f"{result_stem(f'{base.name}-sweep', base.driver.name, datetime.now(UTC))}.json"


def _stopped_sweep(base: RunRequest, points: list[sweep.SweepPoint], output: Output) -> None:
    """A sweep cut short: its document lists the runs so far (no table or chart, which would
    spend the stop budget), marked incomplete."""
    summary = sweep.sweep_document(base.name, base.driver.name, points) | {"incomplete": True}
    name = _sweep_name(base)

    def write(directory: Path) -> Path:
        write_json_atomic(directory / name, summary)
        return directory / name

    target = write_displaced(output.out_dir, write, output)
    click.echo(f"sweep stopped after {len(points)} run(s): {target}", err=True)


@cli.command("matrix", epilog=MATRIX_EXAMPLES)
@click.argument("plan_path", metavar="PLAN", type=click.Path(path_type=Path))
@click.option(
    "--repeat", metavar="N", type=click.IntRange(min=1), default=None, help="Runs per point."
)
@click.option(
    "--group-by",
    metavar="FIELD,...",
    default=None,
    help="Fields whose values make one chart line (F,F,...) [default: every varied field "
    "but producerRate].",
)
@click.option("--dry-run", is_flag=True, help="List the points (checked) and run nothing.")
@opts.grouped("options", opts.run_options, *STUDY_RUN)
@LENIENT
@opts.grouped(
    "output",
    opts.output,
    *_study_output("Only each run's closing aggregate.", "No HTML report per run."),
)
@opts.grouped("placement", opts.placement, *STUDY_PLACEMENT)
@opts.grouped("hooks", opts.hooks, *opts.HOOKS)
def matrix_command(
    plan_path: Path,
    repeat: int | None,
    group_by: str | None,
    dry_run: bool,
    options: RunOptions,
    lenient: bool,
    output: Output,
    placement: Placement,
    hooks: RunHooks,
) -> None:
    """Run PLAN: a base workload on its driver files at every combination of listed values.

    One result per point and repeat, and `<plan>.matrix.json` (+ .csv, .html with
    latency-vs-throughput charts) in the output directory. Re-running the same plan into the
    same directory runs only the points without a complete result. Exit 1 if a run failed or
    missed a --slo threshold (each run is judged; points skipped on a resume are not re-judged).
    """
    plan = matrix.load_matrix(plan_path, repeat, lenient=lenient)
    groups = list(opts.names("--group-by", group_by)) or None
    if dry_run:
        for point in plan.points:
            values = ", ".join(f"{k}={v}" for k, v in point.values.items())
            click.echo(f"{point.key}  {values}")
        click.echo(f"{len(plan.points)} runs", err=True)
        return
    check_outputs({"-o/--out": output.out_dir})
    around = make_hooks(
        plan.before_run + hooks.before_run, plan.after_run + hooks.after_run, hooks.timeout_s
    )

    def run_point(point: matrix.Point) -> RunReport:
        request = RunRequest(
            point.workload,
            point.spec,
            options,
            plan.workload_path,
            output.out_dir,
            placement,
            around,
        )
        return _run_and_show(request, output)

    out_dir = output.out_dir

    def skipped(count: int) -> None:
        if count:
            click.echo(f"matrix: {count} runs already complete in {out_dir}, skipped", err=True)

    target = matrix.document_path(out_dir, plan)
    from loadgen.report import matrix as matrix_report  # matplotlib: only when a matrix ran

    try:
        with stop.handling():
            document = matrix.run_matrix(plan, out_dir, run_point, skipped)
    except (RunAborted, KeyboardInterrupt):
        click.echo(f"matrix interrupted: run the same command again to resume ({target})", err=True)
        raise
    click.echo(matrix_report.table_text(document))
    chosen = groups or matrix_report.default_groups(document)
    written = write_displaced(
        out_dir,
        lambda directory: matrix_report.write_files(document, directory / target.name, chosen),
        output,
    )
    click.echo(f"matrix: {target} ({', '.join(path.name for path in written)})", err=True)
    if any(entry["status"] != "complete" for entry in document["points"]):
        sys.exit(1)
    _slo_exit(output)


@cli.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--lenient", is_flag=True, help="Ignore unknown keys with a warning.")
def validate(files: tuple[Path, ...], lenient: bool) -> None:
    """Check workload and driver files; exit 2 at the first bad one."""
    for path in files:
        kind = validate_file(path, lenient=lenient)
        click.echo(f"ok  {kind:8} {path}")


@cli.command()
@click.option(
    "--drivers",
    default="memory,kafka,pulsar,rabbitmq",
    show_default=True,
    help="Drivers to measure, comma-separated; each against the local broker it declares.",
)
@click.option("--rounds", type=click.IntRange(min=1), default=3, show_default=True)
@click.option(
    "--seconds", type=click.FloatRange(min=1), default=15, show_default=True, help="Per round."
)
@click.option(
    "-o",
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help=f"Write the calibration here (default: ${calibration.ENVIRONMENT} or "
    "~/.config/loadgen/calibration.json, which every run reads).",
)
def calibrate(drivers: str, rounds: int, seconds: float, out: Path | None) -> None:
    """Measure what one loadgen process handles per CPU second on this host, per driver.

    The default process count of a run follows from it. Run it on the host that will run the
    load, idle otherwise; drivers not measured keep the figures they had."""
    from loadgen.studies.calibrate import calibrate as measure
    from loadgen.studies.calibrate import write

    kinds = [kind.strip() for kind in drivers.split(",") if kind.strip()]
    unknown = sorted(set(kinds) - set(driver_classes()))
    if unknown:
        raise ConfigError(
            "unknown driver",
            path="--drivers",
            value=",".join(unknown),
            allowed=sorted(driver_classes()),
        )
    measured = measure(kinds, rounds, seconds, click.echo)
    target = out or calibration.user_file()
    write(measured, target)
    click.echo(f"calibration: {target}")


@cli.command()
@click.argument("baseline", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@click.option(
    "--max-regression",
    default="10%",
    show_default=True,
    help="How much worse a metric may get before it counts as a regression.",
)
def compare(baseline: Path, new: Path, max_regression: str) -> None:
    """Compare a result with a baseline; exit 1 when a metric regressed.

    Either may be a result JSON or the .journal a killed run left."""
    from loadgen.results import compare as comparing

    allowed = comparing.parse_fraction(max_regression)
    before, after = comparing.load_result(baseline), comparing.load_result(new)
    click.echo(f"baseline: {comparing.describe(before)}\nnew:      {comparing.describe(after)}")
    if comparing.describe(before) != comparing.describe(after):
        click.echo("note: the two results come from different workloads or drivers", err=True)
    rows = comparing.compare(before, after)
    click.echo(comparing.format_table(rows, allowed))
    regressed = [row.metric for row in rows if row.regressed(allowed)]
    if regressed:
        click.echo(f"regression beyond {max_regression}: {', '.join(regressed)}", err=True)
        sys.exit(1)


def _out_file(help_text: str) -> Decorator:
    """``-o/--out FILE`` (default: ``None``, the command picks a name)."""
    return click.option(
        "-o", "--out", type=click.Path(dir_okay=False, path_type=Path), default=None, help=help_text
    )


@cli.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@_out_file("HTML file to write (default: <result>.html beside one result, ./report.html for more).")
@click.option(
    "--images",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also write each chart as an image file into this directory (for slides).",
)
@click.option(
    "--format",
    "image_format",
    type=click.Choice(["png", "svg"]),
    default="png",
    show_default=True,
    help="Image format for --images.",
)
def report(
    results: tuple[Path, ...], out: Path | None, images: Path | None, image_format: str
) -> None:
    """Write an offline HTML report of one RESULT, or compare several side by side.

    A RESULT is a result JSON or the .journal a killed run left."""
    from loadgen.report import html  # matplotlib: imported only when a report is written

    if out is None:
        out = results[0].with_suffix(".html") if len(results) == 1 else Path("report.html")
    check_outputs({"-o/--out": out.parent, "--images": images})
    click.echo(html.write_report(results, out))
    if images is not None:
        for path in html.export_charts(results, images, image_format):
            click.echo(path)


@cli.command()
@click.argument("journal", type=click.Path(dir_okay=False, path_type=Path))
@_out_file("Result JSON to write (default: <stem>.json beside the journal).")
def recover(journal: Path, out: Path | None) -> None:
    """Write the result of a run that died (killed, crashed) from the JOURNAL it left.

    The result says "incomplete": true, "stopReason": "unfinished"; report and compare also
    read the journal itself."""
    from loadgen.formats.journal import result_from_journal

    target = out or journal.with_suffix(".json")
    check_outputs({"-o/--out": target.parent})
    write_json_atomic(target, result_from_journal(journal))
    click.echo(target)


@cli.command(epilog=PROBE_EXAMPLES)
@click.argument("url")
@click.option(
    "--rate",
    metavar="RATE",
    callback=opts.rate,
    default="100",
    show_default=True,
    help="Messages per second (1k, 1.5M).",
)
@click.option(
    "--duration",
    metavar="DURATION",
    callback=opts.duration("--duration"),
    default="10s",
    show_default=True,
    help="How long to probe; Ctrl-C ends it early with a verdict.",
)
@click.option(
    "--size",
    metavar="SIZE",
    callback=opts.size,
    default="1024",
    show_default=True,
    help="Message size in bytes (512, 4KiB, 1MiB; 4KB = 4000).",
)
@click.option(
    "--metric",
    type=click.Choice(["e2e", "publish"]),
    default="e2e",
    show_default=True,
    help="Which latency the thresholds judge.",
)
@click.option(
    "--max-p50",
    metavar="MS",
    type=click.FloatRange(min=0),
    help="Exit 1 when p50 exceeds this (ms).",
)
@click.option(
    "--max-p99",
    metavar="MS",
    type=click.FloatRange(min=0),
    help="Exit 1 when p99 exceeds this (ms).",
)
@click.option(
    "-d",
    "--driver",
    "driver_file",
    metavar="DRIVER.yaml",
    type=click.Path(path_type=Path),
    help="Driver YAML with the client settings; the URL's address replaces its own.",
)
@click.option(
    "--topic",
    metavar="NAME",
    help="Probe this topic (created if absent, kept afterwards) instead of a temporary one.",
)
@click.option("--json", "as_json", is_flag=True, help="JSON lines: one per second, then a summary.")
@click.option(
    "--slo",
    metavar="EXPR",
    multiple=True,
    callback=lambda ctx, param, texts: parse_all(texts),
    help="A threshold in `run --slo`'s language (repeatable), e.g. e2e.p99.9<50ms.",
)
def probe(
    url: str,
    rate: float,
    duration: float,
    size: int,
    metric: str,
    max_p50: float | None,
    max_p99: float | None,
    driver_file: Path | None,
    topic: str | None,
    as_json: bool,
    slo: tuple[opts.Threshold, ...],
) -> None:
    """Probe the broker at URL (kafka://, amqp://, pulsar://, tcp:// for Pravega) for latency.

    Secured: kafka+ssl://, amqps:// (?cacertfile=...), pulsar+ssl://, tls://; SASL and
    key/trust stores come from a -d driver file.

    Prints publish and end-to-end p50/p99/max every second; exits 1 when a threshold is
    breached, 3 when the broker is unreachable.
    """
    from loadgen.running import probe as probing

    if duration <= 0:
        raise ConfigError(
            "must be positive", path="--duration", value=duration, allowed="a positive duration"
        )
    spec = probing.driver_for_url(url, driver_file)
    settings = probing.ProbeSettings(rate, duration, size, metric, max_p50, max_p99, topic, slo)
    started_ms: list[int] = []

    def on_interval(stats: IntervalStats) -> None:
        started_ms[:] = started_ms or [stats.start_ms]
        record = probing.second_record(stats, (stats.end_ms - started_ms[0]) / 1000)
        click.echo(probing.as_json_line(record) if as_json else probing.format_interval(record))

    if not as_json:
        click.echo(
            f"probing {spec.name} ({spec.kind}): {rate:g} msg/s of {size} B for {duration:g} s",
            err=True,
        )
    with stop.handling():
        verdict = probing.run_probe(spec, settings, on_interval)
    if as_json:
        click.echo(probing.as_json_line(probing.verdict_record(verdict)))
    else:
        click.echo(probing.format_verdict(verdict))
    if verdict.failed:
        sys.exit(1)


@cli.command()
@click.argument("action", type=click.Choice(["up", "down", "status"]))
@click.argument("kind", default="kafka")
@click.option("--port", type=int, default=None, help="Port for `up` (default: the broker's usual).")
@click.option(
    "--secure",
    is_flag=True,
    help="Kafka or Pulsar behind TLS and a checked login (SASL SCRAM, a token); `up` prints a "
    "driver file that logs in.",
)
def brokers(action: str, kind: str, port: int | None, secure: bool) -> None:
    """Start, stop or show a local broker for development and tests (127.0.0.1 only)."""
    from loadgen.local_brokers import catalogue as local

    if action == "up":
        broker = local.up(kind, port=port, secure=secure)
        click.echo(f"{kind} up at {broker.address} (pid {broker.pid}, log {broker.log_path})")
        if broker.driver_file:
            click.echo(f"driver file: {broker.driver_file}")
    elif action == "down":
        stopped = local.down(kind, secure=secure)
        click.echo(f"{kind} stopped" if stopped else f"{kind} was not running")
    else:
        broker = local.status(kind, secure=secure)
        click.echo(
            f"{kind} running at {broker.address} (pid {broker.pid})"
            if broker
            else f"{kind} not running"
        )
        if broker is None:
            sys.exit(1)


@cli.command(epilog=WORKER_EXAMPLES)
@click.option(
    "--bind",
    metavar="HOST:PORT",
    default="127.0.0.1:8080",
    show_default=True,
    help="HOST:PORT to listen on (port 0: any free one). Not loopback needs a token.",
)
@click.option(
    "--token",
    metavar="TOKEN",
    envvar=TOKEN_ENV,
    default=None,
    help=f"Require this bearer token on every request (or {TOKEN_ENV}).",
)
@click.option(
    "--max-body-mb",
    metavar="N",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_BODY_BYTES // 2**20,
    show_default=True,
    help="Largest request body accepted (the payload pool travels in one).",
)
@click.option(
    "--cpus",
    metavar="CPUS",
    default=None,
    help="Pin the worker to these CPUs (1, 0,2 or 0-3; Linux).",
)
@click.option("--exit-with-stdin", is_flag=True, hidden=True)
@opts.grouped("metrics", opts.metrics_address, *opts.METRICS)
def worker(
    bind: str,
    token: str | None,
    max_body_mb: int,
    cpus: str | None,
    exit_with_stdin: bool,
    metrics: tuple[str, int] | None,
) -> None:
    """Serve runs for a coordinator (`loadgen run --workers URL,...`) until stopped.

    With --metrics-port it also serves its own figures (each interval the coordinator takes).
    """
    if cpus is not None:
        pin(usable_cpus(cpus))  # before any driver exists: its threads inherit it

    def announce(url: str) -> None:
        click.echo(f"{ANNOUNCEMENT}{url}")
        sys.stdout.flush()

    serve(
        bind,
        token or None,
        max_body_bytes=max_body_mb * 2**20,
        announce=announce,
        exit_with_stdin=exit_with_stdin,
        metrics=metrics,
        announce_metrics=lambda url: click.echo(f"loadgen worker metrics on {url}", err=True),
    )


cli.add_command(pipeline)
# LOADGEN_<OPTION> for every option of these (after all are declared, so none is missed)
read_from_environment(run, sweep_command, matrix_command, probe, worker)


def main() -> None:
    """Console-script entry point: run the CLI and turn errors into exit codes; after a signal,
    exit without the interpreter's finalizers (:func:`loadgen.running.stop.exit_at_once`)."""
    try:
        _main()
    except SystemExit as ending:
        code = ending.code
        if stop.WATCH.stop is not None:
            stop.exit_at_once(code if isinstance(code, int) else int(code is not None))
        raise
    if stop.WATCH.stop is not None:
        stop.exit_at_once(0)


def _main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except LoadgenError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(exit_code_for(error))
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
