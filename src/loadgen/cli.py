"""The ``loadgen`` command. Errors map to exit codes here and nowhere else (see loadgen.errors)."""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import click

import loadgen
from loadgen import adhoc
from loadgen.cli_env import read_from_environment
from loadgen.cluster.client import CONNECT_TIMEOUT_S
from loadgen.cluster.placement import Placement, cores, worker_urls
from loadgen.cluster.server import DEFAULT_MAX_BODY_BYTES, serve
from loadgen.cluster.spawn import ANNOUNCEMENT, TOKEN_ENV
from loadgen.cluster.split import SPLITS
from loadgen.cpus import pin, usable_cpus
from loadgen.errors import ConfigError, LoadgenError, RunAborted, exit_code_for
from loadgen.hooks import RunHooks, describe_hook, make_hooks
from loadgen.metrics.board import MetricsBoard
from loadgen.metrics.endpoint import DEFAULT_HOST as DEFAULT_METRICS_HOST
from loadgen.metrics.endpoint import serving
from loadgen.pipeline.commands import pipeline
from loadgen.report.console import (
    delivery_warning,
    format_catch_up,
    format_clock_correction,
    format_outages,
)
from loadgen.report.display import display_for
from loadgen.report.shape import format_shape
from loadgen.results.files import result_stem, write_json_atomic
from loadgen.results.intervals_csv import write_intervals_csv
from loadgen.results.verdict import format_checks, judge_report
from loadgen.runner import RunReport, run_one
from loadgen.scenarios import matrix, sweep
from loadgen.scenarios.tailing import RunOptions
from loadgen.spec import (
    KeyDistributor,
    Workload,
    load_driver_spec,
    load_workload,
    parse_duration,
    validate_file,
)
from loadgen.spec.driver_spec import DriverSpec
from loadgen.spec.units import parse_rate, parse_size
from loadgen.stats import IntervalStats, measured_intervals, merge_all
from loadgen.thresholds import ALLOWED as SLO_GRAMMAR
from loadgen.thresholds import Threshold, parse_all

log = logging.getLogger("loadgen")


def _duration(option: str):
    def convert(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
        return None if value is None else parse_duration(value, option=option)

    return convert


def _rate(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """``--rate``: msg/s as a number or ``10k``, ``1.5M``."""
    return None if value is None else parse_rate(value, f"--{param.name}")


def _size(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """``--size``: bytes as a number or ``4KiB``, ``1MiB``, ``4KB``."""
    return None if value is None else parse_size(value, f"--{param.name}")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(loadgen.__version__, prog_name="loadgen")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def cli(verbose: int) -> None:
    """Load generation for message brokers, OMB-compatible in and out."""
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """Treat SIGTERM like Ctrl-C, so both stop the run and keep the partial result."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _embedded_kafka() -> Iterator[DriverSpec]:
    """The embedded default: a local tansu broker that lives exactly as long as the run."""
    from loadgen.testing.tansu import start_tansu

    broker = start_tansu()
    click.echo(f"started a local Kafka broker (tansu) at {broker.address}", err=True)
    try:
        yield DriverSpec(name="Kafka", kind="kafka", config=broker.driver_config)
    finally:
        broker.stop()


def _stats_interval(ctx: click.Context, param: click.Parameter, value: str) -> float:
    seconds = parse_duration(value, option="--stats-interval")
    if seconds < 1:
        raise ConfigError(
            "must be at least 1 second",
            path="--stats-interval",
            value=seconds,
            allowed="1s or more",
        )
    return seconds


# Options that `run` and `sweep` share: each sweep step is a `run`.
OUT_DIR = click.option(
    "-o",
    "--out",
    "out_dir",
    type=click.Path(path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Directory for result files (and a sweep's summary).",
)
STATS_INTERVAL = click.option(
    "--stats-interval",
    callback=_stats_interval,
    default="10s",
    show_default=True,
    help="Stats period (1s or more).",
)
LENIENT = click.option(
    "--lenient",
    is_flag=True,
    help="Ignore unknown YAML keys with a warning (OMB behaviour) instead of failing.",
)
PLAIN = click.option("--plain", is_flag=True, help="Plain lines even on a terminal (no live view).")
WORKERS = click.option(
    "--workers",
    default=None,
    help="Run on these `loadgen worker`s (URL,URL,...; the first creates the topics) instead "
    "of processes on this host.",
)
WORKERS_WAIT = click.option(
    "--workers-wait",
    callback=_duration("--workers-wait"),
    default="10s",
    show_default=True,
    help="How long each --workers URL may take to answer first (workers started together with "
    "the coordinator, e.g. by a compose file); exit 3 naming one that did not.",
)
PROCESSES = click.option(
    "--processes",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes on this host [default: one per usable core; 1 runs in this process].",
)
BEFORE_RUN = click.option(
    "--before-run",
    multiple=True,
    help="A shell command run before each run (repeatable, in order), e.g. dropping the page "
    "cache; a failure stops the run (exit 2). Output and exit code go into the result.",
)
AFTER_RUN = click.option(
    "--after-run",
    multiple=True,
    help="A shell command run after each run (repeatable), whatever its outcome; a failure is "
    "reported and recorded in the result.",
)
HOOK_TIMEOUT = click.option(
    "--hook-timeout",
    callback=_duration("--hook-timeout"),
    default="5m",
    show_default=True,
    help="The longest one --before-run/--after-run command may take; it is killed then.",
)
TOKEN = click.option(
    "--token",
    envvar=TOKEN_ENV,
    default=None,
    help=f"The workers' token (or {TOKEN_ENV}); never printed or stored.",
)

METRICS_PORT = click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Serve current rates, counts and latency percentiles in Prometheus' text format on "
    "this port (0: any free one, printed). Off by default.",
)
METRICS_HOST = click.option(
    "--metrics-host",
    default=None,
    help=f"Address for --metrics-port [default: {DEFAULT_METRICS_HOST}]. Not loopback needs a "
    "token, which every scrape must then send as a bearer token.",
)


SLO = click.option(
    "--slo",
    multiple=True,
    callback=lambda ctx, param, texts: parse_all(texts),
    help="A threshold on the measured phase (repeatable), e.g. e2e.p99<20ms, publish.p50<=5ms, "
    "rate>=0.99, lost==0: each one listed with its measured value, the verdict written into "
    f"the result; exit 1 when one fails. Grammar: {SLO_GRAMMAR}.",
)


def _slo_exit(output: Output) -> None:
    """Exit 1 naming the runs that missed a --slo threshold (after every run was made)."""
    if output.slo_failed:
        click.echo(f"slo: {len(output.slo_failed)} run(s) missed a threshold", err=True)
        sys.exit(1)


def _metrics_address(port: int | None, host: str | None) -> tuple[str, int] | None:
    """Where to serve metrics, or ``None`` when they are off."""
    if port is None:
        if host is not None:
            raise ConfigError(
                "--metrics-host only says where --metrics-port listens",
                path="--metrics-host",
                value=host,
                allowed="--metrics-port PORT with it",
            )
        return None
    return host or DEFAULT_METRICS_HOST, port


@cli.command()
@click.argument("workloads", metavar="WORKLOAD... | URL", nargs=-1, required=True)
@click.option(
    "-d",
    "--driver",
    "drivers",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Driver YAML (repeatable). Without it, a local Kafka broker is started. With a URL: "
    "one file of client settings (the URL's address wins).",
)
@OUT_DIR
@click.option(
    "--duration",
    callback=_duration("--duration"),
    help="Override testDurationMinutes (30s, 5m, 1h, 1m30s or seconds). URL runs: 1m.",
)
@click.option(
    "--warmup",
    callback=_duration("--warmup"),
    help="Override warmupDurationMinutes (same formats). URL runs: 0.",
)
@click.option("--rate", callback=_rate, help="URL runs: producerRate, msg/s (10k, 1.5M) [1k].")
@click.option("--size", callback=_size, help="URL runs: messageSize (512, 4KiB, 1MiB) [1KiB].")
@click.option("--topics", type=click.IntRange(min=1), help="URL runs: topics [1].")
@click.option("--partitions", type=click.IntRange(min=1), help="URL runs: partitionsPerTopic [1].")
@click.option("--producers", type=click.IntRange(min=0), help="URL runs: producersPerTopic [1].")
@click.option(
    "--subscriptions", type=click.IntRange(min=0), help="URL runs: subscriptionsPerTopic [1]."
)
@click.option(
    "--consumers", type=click.IntRange(min=0), help="URL runs: consumerPerSubscription [1]."
)
@click.option(
    "--key-distributor",
    type=click.Choice([key.value for key in KeyDistributor]),
    help="URL runs: keyDistributor [NO_KEY].",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="URL runs: print the workload and driver files (secrets redacted) and run nothing.",
)
@STATS_INTERVAL
@click.option("--keep-topics", is_flag=True, help="Do not delete the topics after the run.")
@click.option(
    "--existing-topics",
    default=None,
    help="Use these topics (NAME,NAME,...; one per workload topic; created if absent, never "
    "deleted) instead of fresh ones. With producersPerTopic: 0, a consumer-only run reads them.",
)
@click.option(
    "--catch-up-timeout",
    callback=_duration("--catch-up-timeout"),
    default="10m",
    show_default=True,
    help="Catch-up runs: the longest the backlog may take to build, and then to drain.",
)
@LENIENT
@click.option("-q", "--quiet", is_flag=True, help="Only the closing aggregate, no live view.")
@PLAIN
@click.option(
    "--json-lines",
    is_flag=True,
    help="One JSON object per phase, interval and run summary on stdout, for programs.",
)
@click.option("--no-report", is_flag=True, help="Do not write the HTML report beside the result.")
@click.option(
    "--pipeline",
    "pipeline_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also land every interval in DIR for `loadgen pipeline ingest` (Spark).",
)
@WORKERS
@WORKERS_WAIT
@PROCESSES
@click.option(
    "--split",
    type=click.Choice(SPLITS),
    default=None,
    help="How producers and consumers are dealt over workers: OMB's rule (producers on the "
    "first half, consumers on the rest) or whole topics per worker [default: omb; topics for "
    "the memory driver].",
)
@TOKEN
@BEFORE_RUN
@AFTER_RUN
@HOOK_TIMEOUT
@click.option(
    "--cpus",
    default=None,
    help="Pin loadgen to these CPUs (1, 0,2 or 0-3; Linux). Pulsar's producer sent 1.6-1.9x "
    "more pinned to one CPU; see the README before using it with other clients.",
)
@METRICS_PORT
@METRICS_HOST
@SLO
@click.option(
    "--csv",
    "csv_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write FILE: one row per stats interval (warm-up too) and a summary row.",
)
def run(
    workloads: tuple[str, ...],
    drivers: tuple[Path, ...],
    out_dir: Path,
    duration: float | None,
    warmup: float | None,
    rate: float | None,
    size: int | None,
    topics: int | None,
    partitions: int | None,
    producers: int | None,
    subscriptions: int | None,
    consumers: int | None,
    key_distributor: str | None,
    dry_run: bool,
    stats_interval: float,
    keep_topics: bool,
    existing_topics: str | None,
    catch_up_timeout: float,
    lenient: bool,
    quiet: bool,
    plain: bool,
    json_lines: bool,
    no_report: bool,
    pipeline_dir: Path | None,
    workers: str | None,
    workers_wait: float,
    processes: int | None,
    split: str | None,
    token: str | None,
    before_run: tuple[str, ...],
    after_run: tuple[str, ...],
    hook_timeout: float,
    cpus: str | None,
    metrics_port: int | None,
    metrics_host: str | None,
    slo: tuple[Threshold, ...],
    csv_path: Path | None,
) -> None:
    """Run each WORKLOAD against each driver, in order, as OMB does; or one run from flags
    against a broker URL (kafka://, amqp(s)://, pulsar(+ssl)://, tcp:// or tls:// for Pravega,
    a plug-in driver's scheme).

    A failed run is reported and the next one starts (OMB's behaviour); the exit code is the
    worst one seen (exit 1 when a run missed a --slo threshold). Ctrl-C ends the whole
    sequence after writing the partial result.
    """
    given = {
        "--rate": rate,
        "--size": size,
        "--topics": topics,
        "--partitions": partitions,
        "--producers": producers,
        "--subscriptions": subscriptions,
        "--consumers": consumers,
        "--key-distributor": key_distributor,
        "--duration": duration,
        "--warmup": warmup,
    }
    from_url = adhoc.plan(workloads, drivers, given, dry_run)
    if from_url is not None and dry_run:
        click.echo(adhoc.as_yaml(*from_url), nl=False)
        return
    if duration is not None and duration <= 0:
        raise ConfigError(
            "must be positive", path="--duration", value=duration, allowed="a positive duration"
        )
    if catch_up_timeout <= 0:
        raise ConfigError(
            "must be positive",
            path="--catch-up-timeout",
            value=catch_up_timeout,
            allowed="a positive duration",
        )
    if csv_path is not None and len(workloads) * max(len(drivers), 1) > 1:
        raise ConfigError(
            "one CSV file holds one run",
            path="--csv",
            value=str(csv_path),
            allowed="one WORKLOAD and at most one -d",
        )
    output = Output(
        out_dir,
        _display_mode(quiet=quiet, plain=plain, json_lines=json_lines),
        not no_report,
        slo,
        csv_path,
    )
    pinned = None if cpus is None else usable_cpus(cpus)
    placement = _placement(workers, processes, token, split, pinned, workers_wait)
    metrics = _metrics_address(metrics_port, metrics_host)
    board = None if metrics is None else MetricsBoard(role="coordinator", worker="all")
    if from_url is None:
        loaded = [(Path(path), load_workload(path, lenient=lenient)) for path in workloads]
        specs = [load_driver_spec(path, lenient=lenient) for path in drivers]
    else:
        loaded, specs = [(Path(str(from_url[0].name)), from_url[0])], [from_url[1]]
    options = RunOptions(
        duration_s=duration,
        warmup_s=warmup,
        stats_interval_s=stats_interval,
        keep_topics=keep_topics,
        topic_names=_names("--existing-topics", existing_topics),
        catch_up_timeout_s=catch_up_timeout,
        pipeline_dir=None if pipeline_dir is None else str(pipeline_dir),
        metrics=board,
    )
    hooks = make_hooks(before_run, after_run, hook_timeout)
    single_run = len(loaded) * len(specs) == 1
    worst = 0
    with _sigterm_as_interrupt(), contextlib.ExitStack() as stack:
        if board is not None and metrics is not None:  # before a broker starts: fail fast
            click.echo(f"metrics: {stack.enter_context(serving(board, *metrics, token))}", err=True)
        if not specs:
            specs = [stack.enter_context(_embedded_kafka())]
        if pinned is not None:
            pin(pinned)  # after the embedded broker started: it must not inherit the pinning
        for path, workload in loaded:
            for spec in specs:
                try:
                    _run_and_show(workload, path, spec, options, placement, output, hooks)
                except LoadgenError as error:
                    interrupted = isinstance(error, RunAborted) and error.reason == "interrupted"
                    if single_run or interrupted:
                        raise
                    click.echo(f"error: {error}", err=True)
                    worst = max(worst, exit_code_for(error))
    if worst:
        sys.exit(worst)
    _slo_exit(output)


def _names(option: str, text: str | None) -> tuple[str, ...]:
    if text is None:
        return ()
    names = tuple(name.strip() for name in text.split(","))
    if not all(names):
        raise ConfigError("an empty name", path=option, value=text, allowed="NAME or NAME,NAME,...")
    return names


def _placement(
    workers: str | None,
    processes: int | None,
    token: str | None,
    split: str | None = None,
    pinned: frozenset[int] | None = None,
    workers_wait: float = CONNECT_TIMEOUT_S,
) -> Placement:
    """Where runs go: ``--workers``, or ``--processes`` on this host (one per usable core)."""
    if workers and processes is not None:
        raise ConfigError(
            "--processes starts workers on this host, --workers uses others: choose one",
            path="--processes",
            value=processes,
            allowed="no --processes with --workers",
        )
    return Placement(
        workers=worker_urls(workers) if workers else (),
        processes=processes or (len(pinned) if pinned is not None else cores()),
        split=split,
        token=token,
        cpus=() if pinned is None else tuple(sorted(pinned)),
        workers_wait_s=workers_wait,
    )


def _display_mode(*, quiet: bool, plain: bool, json_lines: bool) -> str:
    chosen = [
        flag
        for flag, on in (("--quiet", quiet), ("--plain", plain), ("--json-lines", json_lines))
        if on
    ]
    if len(chosen) > 1:
        raise ConfigError(
            "choose one output mode",
            path=" ".join(chosen),
            value=None,
            allowed="one of --quiet, --plain, --json-lines",
        )
    return {"--quiet": "quiet", "--plain": "plain", "--json-lines": "json-lines"}.get(
        chosen[0] if chosen else "", "auto"
    )


@dataclass(frozen=True)
class Output:
    """Where results go and what the user sees: the display mode and the HTML report or not."""

    out_dir: Path
    display: str
    report: bool
    slo: tuple[Threshold, ...] = ()
    csv: Path | None = None
    slo_failed: list[str] = field(default_factory=list)
    """Result files whose run missed a ``slo`` threshold, filled as runs finish."""


def _run_and_show(
    workload: Workload,
    path: Path,
    spec: DriverSpec,
    options: RunOptions,
    placement: Placement,
    output: Output,
    hooks: RunHooks,
) -> RunReport:
    title = f"{workload.name or path.stem} on {spec.name} ({spec.kind})"
    click.echo(f"== {title}", err=True)
    with display_for(output.display, title) as display:
        shown = replace(options, on_interval=display.interval, on_phase=display.phase)
        try:
            report = run_one(workload, path, spec, output.out_dir, shown, placement, hooks)
        except RunAborted as aborted:
            display.finish(None, aborted.result_path)
            _files_written(aborted.result_path, output)
            raise
        measured = measured_intervals(report.outcome.intervals)
        display.finish(merge_all(measured) if measured else None, str(report.path))
    for record in report.result["run"].get("hooks", ()):
        click.echo(f"hook: {describe_hook(record)}", err=True)
    for note in (
        format_shape(report.result),
        format_clock_correction(report.result),
        delivery_warning(report.result),
        format_outages(report.result.get("outages")),
    ):
        if note is not None:
            click.echo(note, err=True)
    if "catchUp" in report.result and output.display != "json-lines":
        click.echo(format_catch_up(report.result["catchUp"]), err=True)
    _discovered_rate(report.result)
    if output.slo:
        checks = judge_report(report, workload, output.slo)
        click.echo(format_checks(checks), err=True)
        if not all(check.passed for check in checks):
            output.slo_failed.append(str(report.path))
    if output.csv is not None:
        written = write_intervals_csv(
            output.csv, report.outcome.intervals, workload.subscriptions_per_topic
        )
        click.echo(f"csv: {written}", err=True)
    _files_written(str(report.path), output)
    return report


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
    from loadgen.report import html  # matplotlib: imported only when a report is written

    target = Path(result).with_suffix(".html")
    try:
        html.write_report([Path(result)], target)
    except Exception as error:  # the result is safe on disk; a report bug must not hide it
        click.echo(f"warning: the report was not written: {error!r}", err=True)
        return
    click.echo(f"report: {target}", err=True)


@cli.command("sweep")
@click.argument("workload_path", metavar="WORKLOAD", type=click.Path(path_type=Path))
@click.option(
    "-d",
    "--driver",
    type=click.Path(path_type=Path),
    help="Driver YAML. Without it, a local Kafka broker is started.",
)
@OUT_DIR
@click.option("--rates", help="Rates to run: 1k,5k,10k or START:STOP:COUNT (evenly spaced).")
@click.option(
    "--slo-p99",
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
@click.option("--search", "search_range", help="The SLO search's rates: LOW:HIGH (10k:1M).")
@click.option(
    "--max-runs",
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
@click.option("--duration", callback=_duration("--duration"), help="Each run's measured phase.")
@click.option("--warmup", callback=_duration("--warmup"), help="Each run's warm-up.")
@STATS_INTERVAL
@LENIENT
@click.option("-q", "--quiet", is_flag=True, help="Only each run's closing aggregate.")
@PLAIN
@click.option("--no-report", is_flag=True, help="No HTML reports (per run and for the sweep).")
@WORKERS
@WORKERS_WAIT
@PROCESSES
@TOKEN
@BEFORE_RUN
@AFTER_RUN
@HOOK_TIMEOUT
@SLO
def sweep_command(
    workload_path: Path,
    driver: Path | None,
    out_dir: Path,
    rates: str | None,
    slo_p99: float | None,
    slo_metric: str,
    search_range: str | None,
    max_runs: int,
    tolerance: float,
    duration: float | None,
    warmup: float | None,
    stats_interval: float,
    lenient: bool,
    quiet: bool,
    plain: bool,
    no_report: bool,
    workers: str | None,
    workers_wait: float,
    processes: int | None,
    token: str | None,
    before_run: tuple[str, ...],
    after_run: tuple[str, ...],
    hook_timeout: float,
    slo: tuple[Threshold, ...],
) -> None:
    """Run WORKLOAD at several rates (--rates), or search for the highest rate that meets a
    p99 bound (--slo-p99 with --search LOW:HIGH), and write a rate-vs-latency table and chart.

    Each run writes its own result, as `loadgen run` does; the summary
    `<workload>-sweep-<driver>-<time>.json` (and `.html`) lists them. An SLO search that finds
    no rate exits 1; so does a run that misses a --slo threshold (each run is judged).
    """
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
    output = Output(
        out_dir, _display_mode(quiet=quiet, plain=plain, json_lines=False), not no_report, slo
    )
    placement = _placement(workers, processes, token, workers_wait=workers_wait)
    hooks = make_hooks(before_run, after_run, hook_timeout)
    options = RunOptions(duration_s=duration, warmup_s=warmup, stats_interval_s=stats_interval)
    with _sigterm_as_interrupt(), contextlib.ExitStack() as stack:
        spec = (
            load_driver_spec(driver, lenient=lenient)
            if driver is not None
            else stack.enter_context(_embedded_kafka())
        )

        def run_at(at: Workload) -> RunReport:
            return _run_and_show(at, workload_path, spec, options, placement, output, hooks)

        def measure(rate: float) -> sweep.SweepPoint:
            return sweep.measure_point(workload, rate, run_at)

        found = None
        if planned is not None:
            points = [measure(rate) for rate in planned]
        else:
            slo = sweep.Slo(slo_metric, slo_p99)
            found = sweep.search(measure, slo, *bounds, max_runs, tolerance)
            points = found.points
    from loadgen.report import sweep as sweep_report  # matplotlib: only when a sweep ran

    name = workload.name or workload_path.stem
    summary = sweep.sweep_document(name, spec.name, points, found)
    stem = result_stem(f"{name}-sweep", spec.name, datetime.now(UTC))
    target = out_dir / f"{stem}.json"
    write_json_atomic(target, summary)
    click.echo(sweep_report.table_text(summary))
    click.echo(f"sweep: {target}", err=True)
    if not no_report:
        click.echo(
            f"report: {sweep_report.write_html(summary, target.with_suffix('.html'))}", err=True
        )
    if found is not None and found.highest_rate is None:
        sys.exit(1)
    _slo_exit(output)


@cli.command("matrix")
@click.argument("plan_path", metavar="PLAN", type=click.Path(path_type=Path))
@OUT_DIR
@click.option("--repeat", type=click.IntRange(min=1), default=None, help="Runs per point.")
@click.option(
    "--group-by",
    default=None,
    help="Fields whose values make one chart line (F,F,...) [default: every varied field "
    "but producerRate].",
)
@click.option("--dry-run", is_flag=True, help="List the points (checked) and run nothing.")
@click.option("--duration", callback=_duration("--duration"), help="Each run's measured phase.")
@click.option("--warmup", callback=_duration("--warmup"), help="Each run's warm-up.")
@STATS_INTERVAL
@LENIENT
@click.option("-q", "--quiet", is_flag=True, help="Only each run's closing aggregate.")
@PLAIN
@click.option("--no-report", is_flag=True, help="No HTML report per run.")
@WORKERS
@WORKERS_WAIT
@PROCESSES
@TOKEN
@BEFORE_RUN
@AFTER_RUN
@HOOK_TIMEOUT
@SLO
def matrix_command(
    plan_path: Path,
    out_dir: Path,
    repeat: int | None,
    group_by: str | None,
    dry_run: bool,
    duration: float | None,
    warmup: float | None,
    stats_interval: float,
    lenient: bool,
    quiet: bool,
    plain: bool,
    no_report: bool,
    workers: str | None,
    workers_wait: float,
    processes: int | None,
    token: str | None,
    before_run: tuple[str, ...],
    after_run: tuple[str, ...],
    hook_timeout: float,
    slo: tuple[Threshold, ...],
) -> None:
    """Run PLAN: a base workload on its driver files at every combination of listed values.

    One result per point and repeat, and `<plan>.matrix.json` (+ .csv, .html with
    latency-vs-throughput charts) in the output directory. Re-running the same plan into the
    same directory runs only the points without a complete result. Exit 1 if a run failed or
    missed a --slo threshold (each run is judged; points skipped on a resume are not re-judged).
    """
    plan = matrix.load_matrix(plan_path, repeat, lenient=lenient)
    groups = list(_names("--group-by", group_by)) or None
    if dry_run:
        for point in plan.points:
            values = ", ".join(f"{k}={v}" for k, v in point.values.items())
            click.echo(f"{point.key}  {values}")
        click.echo(f"{len(plan.points)} runs", err=True)
        return
    output = Output(
        out_dir, _display_mode(quiet=quiet, plain=plain, json_lines=False), not no_report, slo
    )
    placement = _placement(workers, processes, token, workers_wait=workers_wait)
    hooks = make_hooks(plan.before_run + before_run, plan.after_run + after_run, hook_timeout)
    options = RunOptions(duration_s=duration, warmup_s=warmup, stats_interval_s=stats_interval)

    def run_point(point: matrix.Point) -> RunReport:
        return _run_and_show(
            point.workload, plan.workload_path, point.spec, options, placement, output, hooks
        )

    def skipped(count: int) -> None:
        if count:
            click.echo(f"matrix: {count} runs already complete in {out_dir}, skipped", err=True)

    target = matrix.document_path(out_dir, plan)
    from loadgen.report import matrix as matrix_report  # matplotlib: only when a matrix ran

    try:
        with _sigterm_as_interrupt():
            document = matrix.run_matrix(plan, out_dir, run_point, skipped)
    except (RunAborted, KeyboardInterrupt):
        click.echo(f"matrix interrupted: run the same command again to resume ({target})", err=True)
        raise
    click.echo(matrix_report.table_text(document))
    chosen = groups or matrix_report.default_groups(document)
    written = matrix_report.write_files(document, target, chosen)
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
@click.argument("baseline", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@click.option(
    "--max-regression",
    default="10%",
    show_default=True,
    help="How much worse a metric may get before it counts as a regression.",
)
def compare(baseline: Path, new: Path, max_regression: str) -> None:
    """Compare a result with a baseline; exit 1 when a metric regressed."""
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


@cli.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "-o",
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="HTML file to write (default: <result>.html beside one result, ./report.html for more).",
)
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
    """Write an offline HTML report of one RESULT, or compare several side by side."""
    from loadgen.report import html  # imports matplotlib: slow, so only when asked for

    if out is None:
        out = results[0].with_suffix(".html") if len(results) == 1 else Path("report.html")
    click.echo(html.write_report(results, out))
    if images is not None:
        for path in html.export_charts(results, images, image_format):
            click.echo(path)


@cli.command()
@click.argument("url")
@click.option(
    "--rate",
    callback=_rate,
    default="100",
    show_default=True,
    help="Messages per second (1k, 1.5M).",
)
@click.option(
    "--duration",
    callback=_duration("--duration"),
    default="10s",
    show_default=True,
    help="How long to probe; Ctrl-C ends it early with a verdict.",
)
@click.option(
    "--size",
    callback=_size,
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
@click.option("--max-p50", type=click.FloatRange(min=0), help="Exit 1 when p50 exceeds this (ms).")
@click.option("--max-p99", type=click.FloatRange(min=0), help="Exit 1 when p99 exceeds this (ms).")
@click.option(
    "-d",
    "--driver",
    "driver_file",
    type=click.Path(path_type=Path),
    help="Driver YAML with the client settings; the URL's address replaces its own.",
)
@click.option(
    "--topic",
    help="Probe this topic (created if absent, kept afterwards) instead of a temporary one.",
)
@click.option("--json", "as_json", is_flag=True, help="JSON lines: one per second, then a summary.")
@click.option(
    "--slo",
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
    slo: tuple[Threshold, ...],
) -> None:
    """Probe the broker at URL (kafka://, amqp://, pulsar://, tcp:// for Pravega) for latency.

    Secured: kafka+ssl://, amqps:// (?cacertfile=...), pulsar+ssl://, tls://; SASL and
    key/trust stores come from a -d driver file.

    Prints publish and end-to-end p50/p99/max every second; exits 1 when a threshold is
    breached, 3 when the broker is unreachable.
    """
    from loadgen import probe as probing

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
    with _sigterm_as_interrupt():
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
def brokers(action: str, kind: str, port: int | None) -> None:
    """Start, stop or show a local broker for development and tests (127.0.0.1 only)."""
    from loadgen.testing import local

    if action == "up":
        broker = local.up(kind, port=port) if port else local.up(kind)
        click.echo(f"{kind} up at {broker.address} (pid {broker.pid}, log {broker.log_path})")
    elif action == "down":
        stopped = local.down(kind)
        click.echo(f"{kind} stopped" if stopped else f"{kind} was not running")
    else:
        broker = local.status(kind)
        click.echo(
            f"{kind} running at {broker.address} (pid {broker.pid})"
            if broker
            else f"{kind} not running"
        )
        if broker is None:
            sys.exit(1)


@cli.command()
@click.option(
    "--bind",
    default="127.0.0.1:8080",
    show_default=True,
    help="HOST:PORT to listen on (port 0: any free one). Not loopback needs a token.",
)
@click.option(
    "--token",
    envvar=TOKEN_ENV,
    default=None,
    help=f"Require this bearer token on every request (or {TOKEN_ENV}).",
)
@click.option(
    "--max-body-mb",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_BODY_BYTES // 2**20,
    show_default=True,
    help="Largest request body accepted (the payload pool travels in one).",
)
@click.option("--cpus", default=None, help="Pin the worker to these CPUs (1, 0,2 or 0-3; Linux).")
@click.option("--exit-with-stdin", is_flag=True, hidden=True)
@METRICS_PORT
@METRICS_HOST
def worker(
    bind: str,
    token: str | None,
    max_body_mb: int,
    cpus: str | None,
    exit_with_stdin: bool,
    metrics_port: int | None,
    metrics_host: str | None,
) -> None:
    """Serve runs for a coordinator (`loadgen run --workers URL,...`) until stopped.

    With --metrics-port it also serves its own figures (each interval the coordinator takes).
    """
    metrics = _metrics_address(metrics_port, metrics_host)
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
    """Console-script entry point: run the CLI and turn errors into exit codes."""
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
