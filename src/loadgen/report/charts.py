"""The report's charts as matplotlib figures, and the figures as SVG or PNG bytes.

Every chart has one panel per quantity (publish rate, p99, ...) and one line per result, in the
same colour on every chart, so several results compare side by side. Figures are built on
``matplotlib.figure.Figure`` with the Agg canvas, never pyplot: no global state, no display, safe
in threads and tests.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
from matplotlib.transforms import offset_copy

from loadgen.engine.stats import END_TO_END, PUBLISH
from loadgen.report import series

Result = dict[str, Any]

STYLE = {
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans", "Liberation Sans", "Arial", "Helvetica"],
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.grid": True,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "grid.color": "#dddddd",
    "lines.linewidth": 1.6,
    "svg.fonttype": "none",  # text stays text: small files, crisp, selectable in the browser
}
COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
WIDTH_IN = 10.0
MARKERS_UP_TO = 40
"""Draw a marker per interval while there are few enough of them to tell apart."""

METRIC_NAMES = {PUBLISH: "publish", END_TO_END: "end-to-end"}
LATENCY_CHARTS = {PUBLISH: "publish-latency", END_TO_END: "e2e-latency"}
TIME_CHARTS = ("throughput", *LATENCY_CHARTS.values())
"""The charts over time, on which faults are shaded."""
FAULT_ALPHA = 0.13

_plain = FuncFormatter(lambda value, _: f"{value:,.6g}")


def _color(index: int) -> str:
    return COLORS[index % len(COLORS)]


def _no_data(axes: Axes, message: str) -> None:
    """Say so in the panel instead of drawing an empty axis."""
    axes.set_axis_off()
    axes.text(
        0.5,
        0.5,
        message,
        transform=axes.transAxes,
        ha="center",
        va="center",
        color="#666666",
        fontsize=11,
        bbox={"boxstyle": "round,pad=0.6", "facecolor": "#f4f4f4", "edgecolor": "#cccccc"},
    )


def _figure(
    results: Sequence[Result], title: str, rows: int, columns: int, height: float, **shared: Any
) -> tuple[Figure, list[Axes]]:
    """A titled figure of panels; one result's label goes in the title, several get a legend."""
    figure = Figure(figsize=(WIDTH_IN, height), layout="constrained")
    if len(results) == 1:
        title = f"{title} — {series.label(results[0])}"
    figure.suptitle(title, fontsize=12, fontweight="bold")
    panels = figure.subplots(rows, columns, squeeze=False, **shared).flatten().tolist()
    return figure, panels


def _legend(figure: Figure, results: Sequence[Result], plotted: set[int]) -> None:
    """One legend for the whole figure, below the panels so it never covers a line."""
    if len(results) < 2:
        return
    labels = [
        series.label(r) + ("" if i in plotted else " (no data)") for i, r in enumerate(results)
    ]
    handles = [Line2D([], [], color=_color(i), label=text) for i, text in enumerate(labels)]
    figure.legend(handles=handles, loc="outside lower center", ncols=min(len(results), 2))


def _fault_bands(axes: Axes, results: Sequence[Result], gid: str) -> None:
    """Shade each fault of each result in the result's colour, labelled up its left edge (each
    result's labels a line further right, so the same schedule in two runs stays readable); a
    fault with no duration is a line. Each band's SVG group has the id ``<gid>-r<result>-f<n>``."""
    for index, result in enumerate(results):
        place = offset_copy(axes.get_xaxis_transform(), axes.figure, x=9 * index, units="points")
        for band in series.fault_bands(result):
            band_id = f"{gid}-r{index + 1}-f{band.number}"
            if band.end > band.start:
                axes.axvspan(
                    band.start,
                    band.end,
                    color=_color(index),
                    alpha=FAULT_ALPHA,
                    linewidth=0,
                    zorder=0,
                    gid=band_id,
                )
            else:
                axes.axvline(band.start, color=_color(index), alpha=0.6, zorder=0, gid=band_id)
            axes.text(
                band.start,
                0.98,
                f" {band.label}",
                transform=place,
                rotation=90,
                ha="left",
                va="top",
                fontsize=7,
                color=_color(index),
                parse_math=False,
                gid=f"{band_id}-label",
            )


def _time_panels(
    figure: Figure,
    panels: list[Axes],
    results: Sequence[Result],
    lines: Sequence[Sequence[series.Series]],
    unit: str,
    chart: str,
) -> None:
    """Fill one panel per series name (p50, p99, ...), one line per result, over the faults'
    bands."""
    names = _names(lines)
    for unused in panels[len(names) :]:
        figure.delaxes(unused)
    plotted: set[int] = set()
    for number, (axes, name) in enumerate(zip(panels, names, strict=False), 1):
        axes.set_title(name)
        _fault_bands(axes, results, f"fault-band-{chart}-p{number}")
        highest = 0.0
        for index, found in enumerate(lines):
            for line in found:
                if line.label == name:
                    marker = "o" if len(line.x) <= MARKERS_UP_TO else None
                    axes.plot(line.x, line.y, color=_color(index), marker=marker, markersize=3)
                    highest = max(highest, *line.y)
                    plotted.add(index)
        axes.set_xlim(left=0)
        _from_zero(axes, highest)
        if axes.get_subplotspec().is_last_row():
            axes.set_xlabel("time since measurement began (s)")
    figure.supylabel(unit, fontsize=10)
    _legend(figure, results, plotted)


def _from_zero(axes: Axes, highest: float) -> None:
    """y from 0 with headroom, so a line at its maximum never hides in the top spine."""
    axes.set_ylim(0, max(axes.get_ylim()[1], highest * 1.08))
    axes.yaxis.set_major_formatter(_plain)


def _names(lines: Sequence[Sequence[series.Series]]) -> list[str]:
    """Series names in first-seen order across results."""
    return list(dict.fromkeys(line.label for found in lines for line in found))


def _empty(figure: Figure, panels: list[Axes], message: str) -> Figure:
    """The whole figure becomes one short panel that says why there is nothing to draw."""
    for panel in panels:
        figure.delaxes(panel)
    figure.set_figheight(2.0)
    _no_data(figure.add_subplot(), message)
    return figure


def throughput_figure(results: Sequence[Result]) -> Figure:
    """Publish and consume rates over time, side by side."""
    lines = [series.throughput(r) for r in results]
    figure, panels = _figure(results, "Throughput", 1, 2, 3.8, sharey=True)
    if not any(lines):
        return _empty(figure, panels, "no throughput data (no measured interval)")
    _time_panels(figure, panels, results, lines, "msg/s", "throughput")
    return figure


def latency_figure(results: Sequence[Result], metric: str) -> Figure:
    """p50, p99, p99.9 and max latency per interval, one panel each."""
    name = METRIC_NAMES[metric]
    lines = [series.latency_over_time(r, metric) for r in results]
    figure, panels = _figure(results, f"{name.capitalize()} latency over time", 2, 2, 6.4)
    if not any(lines):
        return _empty(figure, panels, f"no {name} latency was measured")
    _time_panels(figure, panels, results, lines, "latency (ms)", LATENCY_CHARTS[metric])
    return figure


def _nines_axis(axes: Axes, top: float) -> None:
    """Log x axis of 1/(1-p), labelled in percent: 0 %, 90 %, 99 %, ... up to ``top`` nines."""
    axes.set_xscale("log")
    axes.set_xlim(1, 10 ** (top + 0.1))  # room for the last tick label
    decades = range(0, math.floor(top + 1e-9) + 1)
    axes.xaxis.set_major_locator(FixedLocator([10.0**k for k in decades]))
    axes.xaxis.set_minor_locator(NullLocator())
    axes.xaxis.set_major_formatter(
        FuncFormatter(lambda x, _: f"{100 - 100 / x:.{max(0, round(math.log10(x)) - 2)}f}%")
    )
    axes.set_xlabel("percentile")


def distribution_figure(results: Sequence[Result]) -> Figure:
    """Latency by percentile for publish and end-to-end: the tail at a glance."""
    figure, panels = _figure(results, "Latency distribution", 1, 2, 4.2)
    plotted: set[int] = set()
    for axes, metric in zip(panels, (PUBLISH, END_TO_END), strict=True):
        name = METRIC_NAMES[metric]
        axes.set_title(name)
        curves = [series.distribution(r, metric) for r in results]
        if not any(curve.x for curve in curves):
            _no_data(axes, f"no {name} latency was measured")
            continue
        top = 1.0
        for index, curve in enumerate(curves):
            if curve.x:
                x = [series.nines(p) for p in curve.x]
                axes.plot(x, curve.y, color=_color(index))
                top = max(top, math.log10(x[-1]))
                plotted.add(index)
        _nines_axis(axes, top)
        _from_zero(axes, max(max(curve.y, default=0.0) for curve in curves))
    figure.supylabel("latency (ms)", fontsize=10)
    _legend(figure, results, plotted)
    return figure


CHARTS: dict[str, Callable[[Sequence[Result]], Figure]] = {
    "throughput": throughput_figure,
    LATENCY_CHARTS[PUBLISH]: partial(latency_figure, metric=PUBLISH),
    LATENCY_CHARTS[END_TO_END]: partial(latency_figure, metric=END_TO_END),
    "distribution": distribution_figure,
}
"""Every chart of the report by name, in page order."""


def render(name: str, results: Sequence[Result], fmt: str) -> bytes:
    """Chart ``name`` as ``svg`` or ``png`` bytes; the same inputs give the same bytes."""
    # the salt makes SVG element ids unique per chart (several share one page) and repeatable
    with matplotlib.rc_context({**STYLE, "svg.hashsalt": name}):
        figure = CHARTS[name](results)
        out = io.BytesIO()
        metadata = {"Date": None} if fmt == "svg" else {"Software": None}
        figure.savefig(out, format=fmt, dpi=150, metadata=metadata)
    return out.getvalue()
