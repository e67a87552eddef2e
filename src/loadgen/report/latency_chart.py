"""Latency against achieved throughput: a publish and an end-to-end panel side by side.

Shared by ``loadgen sweep`` (one line per percentile) and ``loadgen matrix`` (one line per
group and percentile). A point is a summary entry with ``publishRate`` (msg/s) and
``publishLatency`` / ``endToEndLatency`` maps of percentile label -> ms.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from loadgen.report.charts import STYLE, WIDTH_IN

Point = dict[str, Any]
PANELS = (("publishLatency", "publish"), ("endToEndLatency", "end-to-end"))


@dataclass(frozen=True)
class Line:
    """One line on both panels: ``level`` (``p99``...) of ``points``, in order of throughput."""

    label: str
    points: Sequence[Point]
    level: str
    color: str
    dashed: bool = False


def latency_figure(title: str, lines: Sequence[Line]) -> tuple[Figure, Sequence[Axes]]:
    """The two panels (publish, end-to-end) with every line; the axes for extra marks."""
    chart = Figure(figsize=(WIDTH_IN, 4.2), layout="constrained")
    chart.suptitle(title)
    panels = chart.subplots(1, 2, sharex=True)
    for axes, (field, name) in zip(panels, PANELS, strict=True):
        axes.set_title(f"{name} latency")
        for line in lines:
            points = sorted(line.points, key=lambda point: point["publishRate"])
            axes.plot(
                [point["publishRate"] for point in points],
                [point[field][line.level] for point in points],
                color=line.color,
                linestyle="--" if line.dashed else "-",
                marker="o",
                markersize=4,
                label=line.label,
            )
        axes.set_xlabel("sent (msg/s)")
        axes.set_ylim(bottom=0)
        axes.legend(loc="upper left", fontsize="small")
    panels[0].set_ylabel("ms")
    return chart, panels


def to_svg(chart: Figure, salt: str) -> str:
    """``chart`` as inline SVG (no XML header, no date: the same input gives the same bytes)."""
    with matplotlib.rc_context({**STYLE, "svg.hashsalt": salt}):
        out = io.StringIO()
        chart.savefig(out, format="svg", metadata={"Date": None})
    text = out.getvalue()
    return text[text.index("<svg") :]
