"""The options that the commands share, and the objects they turn into.

Click hands a command one argument per option; a command with forty of them has a forty-parameter
function. :func:`grouped` adds a set of options to a command and hands it one object built
from them instead (a :class:`~loadgen.running.request.RunOptions`, a
:class:`~loadgen.distributed.placement.Placement`, :class:`~loadgen.running.hooks.RunHooks`, an
:class:`Output`), so a command's body mostly assembles a request.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from loadgen.base.cpus import usable_cpus
from loadgen.base.errors import ConfigError
from loadgen.distributed.client import CONNECT_TIMEOUT_S
from loadgen.distributed.placement import Placement, worker_urls
from loadgen.distributed.sizing import ProcessCount
from loadgen.distributed.spawn import TOKEN_ENV
from loadgen.distributed.split import SPLITS
from loadgen.metrics.endpoint import DEFAULT_HOST as DEFAULT_METRICS_HOST
from loadgen.running.hooks import RunHooks, make_hooks
from loadgen.running.request import RunOptions
from loadgen.running.thresholds import ALLOWED as SLO_GRAMMAR
from loadgen.running.thresholds import Threshold, parse_all
from loadgen.spec import parse_duration
from loadgen.spec.durations import parse_wait
from loadgen.spec.units import parse_rate, parse_size

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def grouped(into: str, build: Callable[..., Any], *options: Decorator) -> Decorator:
    """Add ``options`` to a command, which gets ``into=build(**their values)`` instead of them.

    ``build``'s parameters are the options' names; one a command does not declare takes
    ``build``'s default, so ``run`` and ``sweep`` can share a builder with different options.
    """
    names = list(inspect.signature(build).parameters)

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def call(**values: Any) -> Any:
            given = {name: values.pop(name) for name in names if name in values}
            return command(**values, **{into: build(**given)})

        for option in reversed(options):
            call = option(call)
        return call

    return decorate


def duration(option: str) -> Callable[[click.Context, click.Parameter, str | None], float | None]:
    def convert(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
        return None if value is None else parse_duration(value, option=option)

    return convert


def timeout(option: str, default: str, help_text: str) -> Decorator:
    """A ``DURATION`` option with its default shown in ``--help``."""
    return click.option(
        option,
        metavar="DURATION",
        callback=duration(option),
        default=default,
        show_default=True,
        help=help_text,
    )


def backlog_drain_timeout(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> float | None:
    """``--backlog-drain-timeout``: a duration, or ``forever`` (0: OMB's endless wait)."""
    return None if value is None else parse_wait(value, option="--backlog-drain-timeout")


def rate(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """``--rate``: msg/s as a number or ``10k``, ``1.5M``."""
    return None if value is None else parse_rate(value, f"--{param.name}")


def size(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """``--size``: bytes as a number or ``4KiB``, ``1MiB``, ``4KB``."""
    return None if value is None else parse_size(value, f"--{param.name}")


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


def _positive(option: str, seconds: float | None) -> None:
    if seconds is not None and seconds <= 0:
        raise ConfigError(
            "must be positive", path=option, value=seconds, allowed="a positive duration"
        )


def driver_file(name: str, help_text: str, *, multiple: bool = False) -> Decorator:
    """``-d/--driver DRIVER.yaml`` into the parameter ``name``; each command says in
    ``help_text`` what a run without one does."""
    return click.option(
        "-d",
        "--driver",
        name,
        metavar="DRIVER.yaml",
        multiple=multiple,
        type=click.Path(path_type=Path),
        help=help_text,
    )


LENIENT = click.option(
    "--lenient",
    is_flag=True,
    help="Ignore unknown YAML keys with a warning (OMB behaviour) instead of failing.",
)


def names(option: str, text: str | None) -> tuple[str, ...]:
    """``NAME,NAME,...`` as a tuple; an empty name is an error."""
    if text is None:
        return ()
    found = tuple(name.strip() for name in text.split(","))
    if not all(found):
        raise ConfigError("an empty name", path=option, value=text, allowed="NAME or NAME,NAME,...")
    return found


# -- the run's options (RunOptions) ---------------------------------------------------------


def lengths(*, url_runs: bool) -> tuple[Decorator, Decorator]:
    """``--duration`` and ``--warmup``, which override the workload file's; ``url_runs``: the
    command also runs from a URL, which has no file, so the help gives a URL run's defaults."""
    return (
        click.option(
            "--duration",
            metavar="DURATION",
            callback=duration("--duration"),
            help="Override testDurationMinutes (30s, 5m, 1h, 1m30s or seconds)."
            + (" URL runs: 1m." if url_runs else ""),
        ),
        click.option(
            "--warmup",
            metavar="DURATION",
            callback=duration("--warmup"),
            help="Override warmupDurationMinutes (same formats)."
            + (" URL runs: 0." if url_runs else ""),
        ),
    )


STATS_INTERVAL = click.option(
    "--stats-interval",
    metavar="DURATION",
    callback=_stats_interval,
    default="10s",
    show_default=True,
    help="Stats period (1s or more).",
)


def run_options(
    duration: float | None,
    warmup: float | None,
    stats_interval: float,
    keep_topics: bool = False,
    existing_topics: str | None = None,
    catch_up_timeout: float = RunOptions.catch_up_timeout_s,
    pipeline_dir: Path | None = None,
    drain_timeout: float = RunOptions.drain_timeout_s,
    backlog_drain_timeout: float | None = None,
) -> RunOptions:
    _positive("--duration", duration)
    _positive("--catch-up-timeout", catch_up_timeout)
    _positive("--drain-timeout", drain_timeout)
    return RunOptions(
        duration_s=duration,
        warmup_s=warmup,
        stats_interval_s=stats_interval,
        keep_topics=keep_topics,
        topic_names=names("--existing-topics", existing_topics),
        catch_up_timeout_s=catch_up_timeout,
        drain_timeout_s=drain_timeout,
        backlog_drain_timeout_s=backlog_drain_timeout,
        pipeline_dir=None if pipeline_dir is None else str(pipeline_dir),
    )


# -- where runs go (Placement) --------------------------------------------------------------

WORKERS = click.option(
    "--workers",
    metavar="URL,...",
    default=None,
    help="Run on these `loadgen worker`s (URL,URL,...; the first creates the topics) instead "
    "of processes on this host.",
)
WORKERS_WAIT = click.option(
    "--workers-wait",
    metavar="DURATION",
    callback=duration("--workers-wait"),
    default=None,
    help="How long each --workers URL may take to answer first, retried while its port refuses "
    "(workers started together with the coordinator, e.g. by a compose file); exit 3 naming "
    f"one that did not [default: {CONNECT_TIMEOUT_S:g}s, and a refused connection is exit 3 at "
    "once].",
)
PROCESSES = click.option(
    "--processes",
    metavar="N",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes on this host (1 runs in this process) [default: sized to the "
    "workload's rate and the usable CPUs; run.placement.processesChosen says why].",
)
SPLIT = click.option(
    "--split",
    type=click.Choice(SPLITS),
    default=None,
    help="How producers and consumers are dealt over workers: OMB's rule (producers on the "
    "first half, consumers on the rest) or whole topics per worker [default: omb; topics for "
    "the memory driver].",
)
TOKEN = click.option(
    "--token",
    metavar="TOKEN",
    envvar=TOKEN_ENV,
    default=None,
    help=f"The workers' token (or {TOKEN_ENV}); never printed or stored.",
)
CPUS = click.option(
    "--cpus",
    metavar="CPUS",
    default=None,
    help="Pin loadgen to these CPUs (1, 0,2 or 0-3; Linux only); local worker processes take "
    "one CPU each, in turn. Without --processes, loadgen runs one process per CPU given.",
)


def placement(
    workers: str | None,
    processes: int | None,
    token: str | None,
    split: str | None = None,
    cpus: str | None = None,
    workers_wait: float | None = None,
) -> Placement:
    """Where runs go: ``--workers``, or ``--processes`` on this host (else sized per run)."""
    if workers and processes is not None:
        raise ConfigError(
            "--processes starts workers on this host, --workers uses others: choose one",
            path="--processes",
            value=processes,
            allowed="no --processes with --workers",
        )
    pinned = None if cpus is None else usable_cpus(cpus)
    chosen = None
    if processes is None and pinned is not None and not workers:
        processes = len(pinned)
        chosen = ProcessCount(processes, "--cpus", "one per CPU given")
    return Placement(
        workers=worker_urls(workers) if workers else (),
        processes=processes,
        split=split,
        token=token,
        cpus=() if pinned is None else tuple(sorted(pinned)),
        workers_wait_s=workers_wait,
        chosen=chosen,
    )


# -- commands around each run (RunHooks) ----------------------------------------------------

HOOKS = (
    click.option(
        "--before-run",
        metavar="COMMAND",
        multiple=True,
        help="A shell command run before each run (repeatable, in order), e.g. dropping the "
        "page cache; a failure stops the run (exit 2). Output and exit code go into the result.",
    ),
    click.option(
        "--after-run",
        metavar="COMMAND",
        multiple=True,
        help="A shell command run after each run (repeatable), whatever its outcome; a failure "
        "is reported and recorded in the result.",
    ),
    click.option(
        "--hook-timeout",
        metavar="DURATION",
        callback=duration("--hook-timeout"),
        default="5m",
        show_default=True,
        help="The longest one --before-run/--after-run command may take; it is killed then.",
    ),
)


def hooks(before_run: tuple[str, ...], after_run: tuple[str, ...], hook_timeout: float) -> RunHooks:
    return make_hooks(before_run, after_run, hook_timeout)


# -- what the user sees and where results go (Output) ---------------------------------------

OUT_DIR = click.option(
    "-o",
    "--out",
    "out_dir",
    metavar="DIR",
    type=click.Path(path_type=Path),
    default=Path("results"),
    show_default=True,
    help="Directory for result files (and a sweep's summary).",
)
PLAIN = click.option("--plain", is_flag=True, help="Plain lines even on a terminal (no live view).")
SLO = click.option(
    "--slo",
    metavar="EXPR",
    multiple=True,
    callback=lambda ctx, param, texts: parse_all(texts),
    help="A threshold on the measured phase (repeatable), e.g. e2e.p99<20ms, publish.p50<=5ms, "
    "rate>=0.99, lost==0: each one listed with its measured value, the verdict written into "
    f"the result; exit 1 when one fails. Grammar: {SLO_GRAMMAR}.",
)


def quiet(help_text: str) -> Decorator:
    return click.option("-q", "--quiet", is_flag=True, help=help_text)


def no_report(help_text: str) -> Decorator:
    return click.option("--no-report", is_flag=True, help=help_text)


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
    drain_failed: list[str] = field(default_factory=list)
    """Result files whose catch-up drain did not come (:mod:`loadgen.formats.run_verdicts`)."""
    displaced: list[dict[str, Any]] = field(default_factory=list)
    """Files written elsewhere than asked, as ``run.output`` records them (a full disk)."""


def output(
    out_dir: Path,
    quiet: bool,
    plain: bool,
    no_report: bool,
    slo: tuple[Threshold, ...],
    json_lines: bool = False,
    csv_path: Path | None = None,
) -> Output:
    mode = _display_mode(quiet=quiet, plain=plain, json_lines=json_lines)
    return Output(out_dir, mode, not no_report, slo, csv_path)


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


# -- the Prometheus endpoint ----------------------------------------------------------------

_METRICS = (
    click.option(
        "--metrics-port",
        metavar="PORT",
        type=click.IntRange(0, 65535),
        default=None,
        help="Serve current rates, counts and latency percentiles in Prometheus' text format on "
        "this port (0: any free one, printed). Off by default.",
    ),
    click.option(
        "--metrics-host",
        metavar="HOST",
        default=None,
        help=f"Address for --metrics-port [default: {DEFAULT_METRICS_HOST}]. Not loopback needs "
        "a token, which every scrape must then send as a bearer token.",
    ),
)


def metrics_address(metrics_port: int | None, metrics_host: str | None) -> tuple[str, int] | None:
    """Where to serve metrics, or ``None`` when they are off."""
    if metrics_port is None:
        if metrics_host is not None:
            raise ConfigError(
                "--metrics-host only says where --metrics-port listens",
                path="--metrics-host",
                value=metrics_host,
                allowed="--metrics-port PORT with it",
            )
        return None
    return metrics_host or DEFAULT_METRICS_HOST, metrics_port


METRICS = grouped("metrics", metrics_address, *_METRICS)
"""``--metrics-port`` and ``--metrics-host``, handed to the command as ``metrics``: the
:func:`metrics_address` to serve on, or ``None``."""
