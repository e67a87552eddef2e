"""A matrix's summary: a table (text, CSV, HTML) and latency-vs-throughput charts by group.

Drawn from the matrix document (:func:`loadgen.studies.matrix.matrix_document`), so the
files can be redrawn from it later. Points with the same values of the group fields form one
line (p99 solid, p50 dashed) over their achieved throughput; each repeat is its own point, so
the spread between repeats stays visible. Every table ends with a ``verdict`` column (the run's
verdicts in a word: ``ok``, or which failed); the CSV adds each verdict as ``true``/``false``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from loadgen.base.files import all_or_none, write_text_atomic
from loadgen.base.files import csv_text as table_csv
from loadgen.formats.verdict_columns import NAMES, csv_cell, mark
from loadgen.report.charts import COLORS
from loadgen.report.html import CSS
from loadgen.report.latency_chart import Line, latency_figure, to_svg

Document = Mapping[str, Any]
FIGURES = (
    ("sent msg/s", lambda e: e["publishRate"], "{:,.0f}"),
    ("publish p50", lambda e: e["publishLatency"]["p50"], "{:.3f}"),
    ("publish p99", lambda e: e["publishLatency"]["p99"], "{:.3f}"),
    ("e2e p50", lambda e: e["endToEndLatency"]["p50"], "{:.3f}"),
    ("e2e p99", lambda e: e["endToEndLatency"]["p99"], "{:.3f}"),
)
RATE_FIELD = "producerRate"


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def rows(document: Document) -> tuple[list[str], list[list[str]]]:
    """Header and rows: the varied values, the repeat, the figures (ms), status, result and
    verdict (empty for a point without a result)."""
    varied = list(document["varied"])
    head = ["key", *varied, "repeat", *(name for name, _, _ in FIGURES), "status", "result"]
    head.append("verdict")
    body = []
    for entry in document["points"]:
        measured = "publishRate" in entry
        figures = [form.format(get(entry)) if measured else "" for _, get, form in FIGURES]
        values = [_shown(entry["values"].get(field, "")) for field in varied]
        body.append(
            [
                entry["key"],
                *values,
                str(entry["repeat"]),
                *figures,
                entry["status"],
                entry.get("result", ""),
                mark(entry),
            ]
        )
    return head, body


def table_text(document: Document) -> str:
    head, body = rows(document)
    widths = [max(len(cell) for cell in column) for column in zip(head, *body, strict=True)]
    lines = [
        f"{document['matrix']}: {len(document['points'])} of {document['planned']} runs "
        "(latency in ms)",
        "  ".join(cell.rjust(width) for cell, width in zip(head, widths, strict=True)),
    ]
    lines += [
        "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
        for row in body
    ]
    return "\n".join(lines)


def csv_text(document: Document) -> str:
    """The table, then each verdict (``rateHeld``, ``consumersKeptUp``, ``drainCompleted``) as
    ``true``, ``false`` or empty (not judged, not a catch-up run, no verdicts)."""
    head, body = rows(document)
    verdicts = [[csv_cell(entry.get(name)) for name in NAMES] for entry in document["points"]]
    return table_csv(
        [*head, *NAMES], [[*row, *judged] for row, judged in zip(body, verdicts, strict=True)]
    )


def default_groups(document: Document) -> list[str]:
    """Every varied field but the rate: a line per combination, over the rates."""
    return [field for field in document["varied"] if field != RATE_FIELD] or ["driver"]


def lines(document: Document, group_by: Sequence[str]) -> list[Line]:
    """One p99 and one p50 line per group of measured points."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for entry in document["points"]:
        if "publishRate" in entry:
            label = ", ".join(f"{f}={_shown(entry['values'].get(f, ''))}" for f in group_by)
            groups.setdefault(label, []).append(entry)
    drawn = []
    for index, (label, points) in enumerate(groups.items()):
        color = COLORS[index % len(COLORS)]
        drawn.append(Line(f"{label} p99", points, "p99", color))
        drawn.append(Line(f"{label} p50", points, "p50", color, dashed=True))
    return drawn


def write_files(document: Document, json_path: Path, group_by: Sequence[str]) -> list[Path]:
    """The CSV and HTML beside the matrix document."""
    csv_path = json_path.with_suffix("").with_suffix(".csv")
    html_path = json_path.with_suffix("").with_suffix(".html")
    with all_or_none() as written:
        write_text_atomic(csv_path, csv_text(document))
        written.append(csv_path)
        write_text_atomic(html_path, _page(document, group_by))
    return [csv_path, html_path]


def _page(document: Document, group_by: Sequence[str]) -> str:
    title = f"loadgen matrix: {document['matrix']}"
    head, body = rows(document)
    header = "".join(f"<th>{escape(cell)}</th>" for cell in head)
    result = head.index("result")
    table_rows = []
    for row in body:
        cells = [f"<td>{escape(cell)}</td>" for cell in row]
        link = escape(row[result])
        cells[result] = f'<td><a href="{link}">{link}</a></td>' if link else "<td></td>"
        table_rows.append(f"<tr>{''.join(cells)}</tr>")
    drawn = lines(document, group_by)
    chart = ""
    if drawn:
        figure, _ = latency_figure(f"Latency vs throughput by {', '.join(group_by)}", drawn)
        chart = (
            f'<figure class="chart">{to_svg(figure, "matrix")}<figcaption>Aggregated latency of '
            "each run (measured phase) against the rate it sent; p99 solid, p50 dashed; every "
            "repeat is a point.</figcaption></figure>"
        )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{escape(title)}</h1>{chart}<h2>Runs (latency in ms)</h2>"
        f"<table><thead><tr>{header}</tr></thead><tbody>{''.join(table_rows)}</tbody></table>"
        "</body></html>\n"
    )
