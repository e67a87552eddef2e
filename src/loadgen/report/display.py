"""What ``loadgen run`` shows while a run goes: a live view, plain lines, JSON lines or nothing.

Each display gets the same three calls (a phase begins, an interval ends, the run ends), so the
run code does not care which one the user picked. The live view (rich) is for terminals: a
dashboard that redraws itself with the phase's progress, the latest rates and percentiles, and
keeps each interval's plain line in the scrollback above it. Plain lines are for logs and CI;
JSON lines (stdout, one object per event) are for programs.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Protocol, Self, TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from loadgen.engine.stats import END_TO_END, PUBLISH, IntervalStats
from loadgen.formats.json_lines import interval_record, latency_ms
from loadgen.report.console import format_aggregate, format_interval

SUMMARY_PERCENTILES = (50, 99, 99.9, 99.99)


class RunDisplay(Protocol):
    def on_phase(self, name: str, seconds: float | None) -> None: ...
    def on_interval(self, stats: IntervalStats, backlog: int) -> None: ...
    def finish(self, aggregate: IntervalStats | None, result: str | None) -> None: ...
    def __enter__(self) -> RunDisplay: ...
    def __exit__(self, *exc: object) -> None: ...


class _Stateless:
    """A display with nothing to start or stop around a run."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _phase_of(stats: IntervalStats) -> str:
    return "warmup" if stats.warmup else "measure"


class PlainDisplay(_Stateless):
    """One line per interval on stdout, phases on stderr; ``quiet`` keeps only the aggregate."""

    def __init__(self, out: TextIO, *, quiet: bool = False) -> None:
        self._out = out
        self._quiet = quiet

    def on_phase(self, name: str, seconds: float | None) -> None:
        if not self._quiet and seconds is not None and name in ("warmup", "measure"):
            print(f"-- {name} for {seconds:g} s", file=sys.stderr, flush=True)

    def on_interval(self, stats: IntervalStats, backlog: int) -> None:
        if not self._quiet:
            print(format_interval(stats, backlog, _phase_of(stats)), file=self._out, flush=True)

    def finish(self, aggregate: IntervalStats | None, result: str | None) -> None:
        if aggregate is not None:
            print(format_aggregate(aggregate), file=self._out, flush=True)


class JsonLinesDisplay(_Stateless):
    """One JSON object per phase, interval and run summary on stdout, nothing else there."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def _emit(self, record: dict[str, Any]) -> None:
        self._out.write(json.dumps(record, separators=(",", ":")) + "\n")
        self._out.flush()

    def on_phase(self, name: str, seconds: float | None) -> None:
        self._emit(
            {"type": "phase", "phase": name, "seconds": seconds, "at_ms": time.time_ns() // 10**6}
        )

    def on_interval(self, stats: IntervalStats, backlog: int) -> None:
        self._emit(interval_record(stats, backlog, _phase_of(stats)))

    def finish(self, aggregate: IntervalStats | None, result: str | None) -> None:
        """The measured phase's percentiles (``None`` when it never began) and the result file."""
        latencies = {
            key: None
            if aggregate is None
            else latency_ms(aggregate.histogram(metric), SUMMARY_PERCENTILES)
            for key, metric in (("publish_ms", PUBLISH), ("e2e_ms", END_TO_END))
        }
        self._emit({"type": "summary", **latencies, "result": result})


def _clock(seconds: float) -> str:
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}:{rest:02d}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


class LiveDisplay:
    """A redrawing dashboard for a terminal; interval lines scroll above it."""

    def __init__(self, console: Console, title: str) -> None:
        self._console = console
        self._title = title
        self._phase: tuple[str, float | None, float] = ("setup", None, time.monotonic())
        self._latest: dict[str, Any] | None = None
        self._live = Live(
            console=console, get_renderable=self._render, refresh_per_second=4, transient=True
        )

    def __enter__(self) -> LiveDisplay:
        self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.stop()

    def on_phase(self, name: str, seconds: float | None) -> None:
        self._phase = (name, seconds, time.monotonic())

    def on_interval(self, stats: IntervalStats, backlog: int) -> None:
        self._latest = interval_record(stats, backlog, _phase_of(stats))
        self._console.print(
            format_interval(stats, backlog, _phase_of(stats)),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )

    def finish(self, aggregate: IntervalStats | None, result: str | None) -> None:
        self._live.stop()
        if aggregate is not None:
            self._console.print(
                format_aggregate(aggregate), markup=False, highlight=False, soft_wrap=True
            )

    def _progress(self) -> Table:
        name, planned, started = self._phase
        elapsed = time.monotonic() - started
        row = Table.grid(padding=(0, 2))
        if planned:
            bar = ProgressBar(total=planned, completed=min(elapsed, planned), width=40)
            row.add_row(
                Text(f"{name:<8}", style="bold"), bar, f"{_clock(elapsed)} / {_clock(planned)}"
            )
        else:
            row.add_row(Text(f"{name:<8}", style="bold"), f"{_clock(elapsed)}")
        return row

    def _numbers(self, latest: dict[str, Any]) -> Table:
        table = Table(box=None, padding=(0, 2), show_edge=False)
        for column in ("", "msg/s", "MB/s", "p50 ms", "p99 ms", "p99.9 ms", "max ms"):
            table.add_column(column, justify="right" if column else "left")
        for label, rate, mb, points in (
            ("publish", "publish_rate", "publish_mb_s", latest["publish_ms"]),
            ("consume/e2e", "consume_rate", "consume_mb_s", latest["e2e_ms"]),
        ):
            table.add_row(
                label,
                f"{latest[rate]:,.0f}",
                f"{latest[mb]:.1f}",
                *(_ms(points[key]) for key in ("p50", "p99", "p99.9", "max")),
            )
        return table

    def _render(self) -> Group:
        parts: list[Any] = [Text(self._title, style="bold cyan"), self._progress()]
        latest = self._latest
        if latest is not None:
            parts.append(self._numbers(latest))
            parts.append(
                Text(f"backlog {latest['backlog']:,}   publish errors {latest['publish_errors']:,}")
            )
        return Group(*parts)


def display_for(mode: str, title: str, out: TextIO | None = None) -> RunDisplay:
    """The display ``mode`` asks for; ``auto`` is the live view on a terminal, plain otherwise."""
    stream = out or sys.stdout
    if mode == "auto":
        mode = "live" if stream.isatty() else "plain"
    if mode == "live":
        return LiveDisplay(Console(file=stream), title)
    if mode == "json-lines":
        return JsonLinesDisplay(stream)
    return PlainDisplay(stream, quiet=mode == "quiet")
