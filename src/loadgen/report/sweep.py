"""A sweep's rate-vs-latency table (text and HTML) and chart (publish and end-to-end p50/p99/p99.9).

Drawn from the sweep summary document (:func:`loadgen.studies.sweep.sweep_document`), so
``loadgen sweep`` and anyone reading the summary later get the same table. The HTML page is
self-contained like the run report (inline SVG, no JavaScript) and links each rate's result.
The ``verdict`` column gives each run's verdicts in a word
(:func:`loadgen.formats.verdict_columns.mark`): ``ok``, or which failed.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from loadgen.base.files import write_text_atomic
from loadgen.formats.verdict_columns import mark
from loadgen.report.charts import COLORS
from loadgen.report.html import CSS
from loadgen.report.latency_chart import Line, latency_figure, to_svg

Summary = dict[str, Any]
METRICS = (("publishLatency", "publish"), ("endToEndLatency", "end-to-end"))
LEVELS = ("p50", "p99", "p99.9")


def _sorted_points(summary: Summary) -> list[dict[str, Any]]:
    return sorted(summary["points"], key=lambda point: point["targetRate"])


def _verdict(point: dict[str, Any], summary: Summary) -> str:
    if "slo" not in summary:
        return ""
    return f"fails: {point['failedBecause']}" if "failedBecause" in point else "passes"


def _slo_line(summary: Summary) -> str | None:
    slo = summary.get("slo")
    if slo is None:
        return None
    bound = f"{slo['metric']} p99 <= {slo['p99Ms']:g} ms"
    if slo["highestRate"] is None:
        return f"no rate from {slo['low']:,.0f} to {slo['high']:,.0f} msg/s meets {bound}"
    return f"highest rate meeting {bound}: {slo['highestRate']:,.0f} msg/s"


def table_text(summary: Summary) -> str:
    """The table as fixed-width text, one row per rate, lowest first."""
    heads = [f"{short} {level}" for _, short in METRICS for level in LEVELS]
    short_heads = [h.replace("end-to-end", "e2e") for h in heads]
    points = _sorted_points(summary)
    width = max(len(text) for text in ["verdict", *(mark(point) for point in points)]) + 2
    lines = [
        f"{summary['workload']} on {summary['driver']}: latency (ms) by rate",
        f"{'target msg/s':>15}{'sent msg/s':>15}"
        + "".join(f"{h:>15}" for h in short_heads)
        + f"{'verdict':>{width}}",
    ]
    for point in points:
        values = "".join(
            f"{point[field][level]:>15.3f}" for field, _ in METRICS for level in LEVELS
        )
        flags = " ".join(
            part
            for part in ("incomplete" if point["incomplete"] else "", _verdict(point, summary))
            if part
        )
        lines.append(
            f"{point['targetRate']:>15,.0f}{point['publishRate']:>15,.0f}{values}"
            f"{mark(point):>{width}}" + (f"  {flags}" if flags else "")
        )
    if (slo := _slo_line(summary)) is not None:
        lines.append(slo)
    return "\n".join(lines)


def figure(summary: Summary) -> Figure:
    """Latency against achieved rate: publish and end-to-end side by side, one line per level."""
    points = _sorted_points(summary)
    lines = [
        Line(level, points, level, color) for color, level in zip(COLORS, LEVELS, strict=False)
    ]
    title = f"Latency vs rate — {summary['workload']} on {summary['driver']}"
    chart, panels = latency_figure(title, lines)
    slo = summary.get("slo")
    if slo is not None:
        index = 0 if slo["metric"] == "publish" else 1
        panels[index].axhline(slo["p99Ms"], color="#666666", linestyle="--", linewidth=1)
    return chart


def svg(summary: Summary) -> str:
    return to_svg(figure(summary), "sweep")


def _html_table(summary: Summary, base: Path) -> str:
    heads = "".join(f"<th>{escape(short)} {level}</th>" for _, short in METRICS for level in LEVELS)
    heads += "<th>verdict</th>"
    verdict_head = "<th>SLO</th>" if "slo" in summary else ""
    rows = []
    for point in _sorted_points(summary):
        cells = "".join(f"<td>{point[f][level]:.3f}</td>" for f, _ in METRICS for level in LEVELS)
        cells += f"<td>{escape(mark(point))}</td>"
        result = Path(point["result"])
        link = escape(result.name if result.parent == base else str(result))
        verdict = f"<td>{escape(_verdict(point, summary))}</td>" if "slo" in summary else ""
        rows.append(
            f"<tr><td>{point['targetRate']:,.0f}</td><td>{point['publishRate']:,.0f}</td>"
            f'{cells}{verdict}<td><a href="{link}">{link}</a></td></tr>'
        )
    return (
        f"<table><thead><tr><th>target msg/s</th><th>sent msg/s</th>{heads}{verdict_head}"
        f"<th>result</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def write_html(summary: Summary, out: Path) -> Path:
    """The sweep page: the SLO answer if any, the table (ms) and the chart."""
    title = f"loadgen sweep: {summary['workload']} on {summary['driver']}"
    slo = _slo_line(summary)
    answer = f"<p><strong>{escape(slo)}</strong></p>" if slo else ""
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{escape(title)}</h1>{answer}<h2>Latency (ms) by rate</h2>"
        f"{_html_table(summary, out.parent)}"
        f'<figure class="chart">{svg(summary)}<figcaption>Aggregated latency of each run '
        "(measured phase) against the rate it sent.</figcaption></figure></body></html>\n"
    )
    write_text_atomic(out, page)
    return out
