"""``loadgen sweep``, ``matrix`` and ``calibrate``: many runs, each shown as ``loadgen run``
shows one (:func:`loadgen.cli.run.run_and_show`), and one summary of them."""

from __future__ import annotations

import contextlib
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import click

from loadgen.base import calibration
from loadgen.base.errors import ConfigError, RunAborted
from loadgen.base.files import all_or_none, result_stem, write_json_atomic
from loadgen.base.writable import check_outputs
from loadgen.cli import options as opts
from loadgen.cli.options import Decorator, Output
from loadgen.cli.output import write_displaced
from loadgen.cli.run import embedded_kafka, run_and_show, serve_metrics, slo_exit
from loadgen.distributed.placement import Placement
from loadgen.driver_api import driver_classes
from loadgen.driver_api.driver_file import load_driver_spec
from loadgen.engine.outcome import SavedRun
from loadgen.running import stop
from loadgen.running.hooks import RunHooks, make_hooks
from loadgen.running.request import RunOptions, RunRequest
from loadgen.spec import load_workload
from loadgen.studies import matrix, sweep

SWEEP_EXAMPLES = """\b
Examples:
  loadgen sweep -d kafka.yaml workload.yaml --rates 10k,50k,100k --duration 1m
  loadgen sweep -d kafka.yaml workload.yaml --rates 10k:100k:10
  loadgen sweep -d kafka.yaml workload.yaml --slo-p99 20 --search 10k:1M --max-runs 7
      (--rates runs the rates listed; --search bounds an --slo-p99 search: not both)
"""
MATRIX_EXAMPLES = """\b
Examples:
  loadgen matrix plan.yaml --dry-run
  loadgen matrix plan.yaml -o results/matrix --repeat 3 --duration 2m
  loadgen matrix plan.yaml --group-by driver,messageSize
"""
STUDY_RUN = (*opts.lengths(url_runs=False), opts.STATS_INTERVAL)
STUDY_PLACEMENT = (opts.WORKERS, opts.WORKERS_WAIT, opts.PROCESSES, opts.TOKEN)
"""A sweep or a matrix: where its runs go (no --split or --cpus: each run is a plain run)."""


def _study_output(help_quiet: str, help_no_report: str) -> tuple[Decorator, ...]:
    return (
        opts.OUT_DIR,
        opts.quiet(help_quiet),
        opts.PLAIN,
        opts.no_report(help_no_report),
        opts.SLO,
    )


@click.command("sweep", epilog=SWEEP_EXAMPLES)
@click.argument("workload_path", metavar="WORKLOAD", type=click.Path(path_type=Path))
@opts.driver_file(
    "driver", "Driver YAML. Without it, a local tansu (Kafka-compatible) broker is started."
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
@opts.LENIENT
@opts.grouped(
    "output",
    opts.output,
    *_study_output(
        "Only each run's closing aggregate.", "No HTML reports (per run and for the sweep)."
    ),
)
@opts.grouped("placement", opts.placement, *STUDY_PLACEMENT)
@opts.grouped("hooks", opts.hooks, *opts.HOOKS)
@opts.METRICS
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
    metrics: tuple[str, int] | None,
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
        board = serve_metrics(stack, metrics, placement.token)
        spec = (
            load_driver_spec(driver, lenient=lenient)
            if driver is not None
            else stack.enter_context(embedded_kafka())
        )
        # one process count for every step, sized for the highest rate: the steps compare
        top = max(planned) if planned is not None else bounds[1]
        placement = placement.sized(spec, sweep.at_rate(workload, top))
        base = RunRequest(
            workload,
            spec,
            options,
            workload_path,
            output.out_dir,
            placement,
            hooks,
            metrics=board,
        )

        taken: list[sweep.SweepPoint] = []

        def measure(rate: float) -> sweep.SweepPoint:
            try:
                point = sweep.measure_point(
                    workload, rate, lambda at: run_and_show(replace(base, workload=at), output)
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
    slo_exit(output)


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


@click.command("matrix", epilog=MATRIX_EXAMPLES)
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
@opts.LENIENT
@opts.grouped(
    "output",
    opts.output,
    *_study_output("Only each run's closing aggregate.", "No HTML report per run."),
)
@opts.grouped("placement", opts.placement, *STUDY_PLACEMENT)
@opts.grouped("hooks", opts.hooks, *opts.HOOKS)
@opts.METRICS
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
    metrics: tuple[str, int] | None,
) -> None:
    """Run PLAN: a base workload on its driver files at every combination of listed values.

    One result per point and repeat, and `<plan>.matrix.json`, `<plan>.csv` and `<plan>.html`
    (latency-vs-throughput charts) in the output directory. Re-running the same plan into the
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
    out_dir = output.out_dir

    def skipped(count: int) -> None:
        if count:
            click.echo(f"matrix: {count} runs already complete in {out_dir}, skipped", err=True)

    target = matrix.document_path(out_dir, plan)
    from loadgen.report import matrix as matrix_report  # matplotlib: only when a matrix ran

    try:
        with stop.handling(), contextlib.ExitStack() as stack:
            board = serve_metrics(stack, metrics, placement.token)

            def run_point(point: matrix.Point) -> SavedRun:
                request = RunRequest(
                    point.workload,
                    point.spec,
                    options,
                    plan.workload_path,
                    out_dir,
                    placement,
                    around,
                    metrics=board,
                )
                return run_and_show(request, output)

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
    slo_exit(output)


@click.command()
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
