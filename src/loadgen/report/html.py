"""``loadgen report``: one self-contained HTML page for one result, or several side by side.

The page needs no network and no JavaScript: charts are inline SVG, styles are inline, so it
can be mailed, archived next to the result or opened on an air-gapped machine. Every string
that comes from a result file is escaped, because a workload name is user input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from html import escape
from pathlib import Path
from statistics import fmean
from typing import Any

from loadgen.base.errors import ConfigError
from loadgen.base.files import write_bytes_atomic, write_text_atomic
from loadgen.engine.outcome import describe_drain
from loadgen.engine.stats import END_TO_END, PUBLISH
from loadgen.formats.json_lines import MB
from loadgen.report import charts, series
from loadgen.report.shape import shape_rows
from loadgen.result_files.compare import load_result

Result = dict[str, Any]
IMAGE_FORMATS = ("png", "svg")
LATENCY_POINTS = (
    ("p50", "50pct"),
    ("p99", "99pct"),
    ("p99.9", "999pct"),
    ("p99.99", "9999pct"),
    ("max", "Max"),
)
CAPTIONS = {
    "throughput": "Messages per second in each stats interval of the measured phase.",
    "publish-latency": "Publish latency (send to broker acknowledgement) in each interval.",
    "e2e-latency": "End-to-end latency (send to receive) in each interval.",
    "distribution": "Latency by percentile over the whole measured phase: a point at 99% "
    "means 99% of messages were at least that fast.",
}

CSS = """
body { font: 15px/1.45 system-ui, 'DejaVu Sans', sans-serif; color: #222; margin: 0 auto;
       max-width: 1060px; padding: 24px; }
h1 { font-size: 24px; margin: 0 0 16px; }
h2 { font-size: 18px; margin: 32px 0 8px; }
.result { border: 1px solid #ddd; border-left: 6px solid var(--color); border-radius: 4px;
          padding: 10px 16px; margin: 12px 0; }
.result h2 { margin: 0 0 6px; font-size: 17px; overflow-wrap: anywhere; }
.result dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
.result dt { color: #666; }
.result dd { margin: 0; overflow-wrap: anywhere; }
.slo-pass { color: #137333; font-weight: bold; margin: 0 0 8px; }
.incomplete, .slo-fail { background: #fdecea; border: 1px solid #d93025; color: #a50e0e;
              font-weight: bold; padding: 8px 12px; border-radius: 4px; margin: 0 0 8px; }
table { border-collapse: collapse; margin: 8px 0; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #e4e4e4; padding: 4px 12px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
thead th { border-bottom: 2px solid #999; vertical-align: bottom; overflow-wrap: anywhere; }
tr.group td { font-weight: bold; background: #f6f6f6; text-align: left; }
table.verdicts caption { text-align: left; font-weight: bold; }
table.verdicts th, table.verdicts td { text-align: left; white-space: nowrap; }
table.verdicts td:last-child { white-space: normal; }
table.verdicts td.fail { color: #a50e0e; font-weight: bold; }
.change { color: #666; font-size: 13px; }
figure.chart { margin: 24px 0; }
figure.chart svg { width: 100%; height: auto; }
figcaption, .note { color: #555; font-size: 13px; }
"""


def _text(value: Any) -> str:
    return escape(str(value))


def _when(result: Result, field: str) -> str:
    text = result.get("run", {}).get(field)
    if not text:
        return "—"
    return datetime.fromisoformat(text).strftime("%Y-%m-%d %H:%M:%S %Z").strip()


def _setup(result: Result) -> str:
    """The workload's shape in one line. OMB's ``consumersPerTopic`` is consumers per
    subscription, so the subscription count (known only from loadgen's echo) is shown beside it."""
    fields = ("topics", "partitions", "messageSize", "producersPerTopic", "consumersPerTopic")
    topics, partitions, size, producers, consumers = (result.get(f, "?") for f in fields)
    subscriptions = result.get("run", {}).get("workload", {}).get("subscriptionsPerTopic", "?")
    return (
        f"{topics} topic(s) × {partitions} partition(s), {size}-byte messages, "
        f"{producers} producer(s) per topic, {subscriptions} subscription(s) per topic "
        f"× {consumers} consumer(s)"
    )


def _header(index: int, path: Path, result: Result) -> str:
    """Who, what and when for one result; an incomplete run says so before anything else."""
    run = result.get("run", {})
    banner = ""
    if result.get("incomplete"):
        reason = _text(result.get("stopReason", "unknown"))
        detail = f" — {_text(run['stopDetail'])}" if run.get("stopDetail") else ""
        banner = (
            f'<p class="incomplete">Incomplete run: stopped early ({reason}){detail}. '
            "The numbers cover only what was measured before it stopped.</p>"
        )
    rows = [
        ("file", path.name),
        ("workload", result.get("workload", "?")),
        ("driver", result.get("driver", "?")),
        ("setup", _setup(result)),
        *shape_rows(result),
        ("started", _when(result, "startedAt")),
        ("ended", _when(result, "endedAt")),
        ("loadgen", run.get("loadgenVersion", "— (not a loadgen result)")),
        ("host", run.get("host", "—")),
    ]
    cells = "".join(f"<dt>{name}</dt><dd>{_text(value)}</dd>" for name, value in rows)
    return (
        f'<section class="result" style="--color: {charts.COLORS[index % len(charts.COLORS)]}">'
        f"<h2>{_text(series.label(result))}</h2>{banner}{_slo(result)}{_verdicts(result)}"
        f"<dl>{cells}</dl></section>"
    )


def _rate_figures(rate: Result) -> str:
    return (
        f"{rate['publishRate']:,.0f} of {rate['askedRate']:,.0f} msg/s asked "
        f"({rate['ratio'] * 100:.2f} %, tolerance {rate['tolerance'] * 100:.3g} %)"
    )


def _consumer_figures(consumers: Result) -> str:
    return (
        f"backlog {consumers['backlogAtStart']:,} → {consumers['backlogAtEnd']:,} in "
        f"{consumers['seconds']:.0f} s, trend {consumers['trend']:+,.0f} msg/s, "
        f"allowance {consumers['allowance']:,.0f}"
    )


def _drain_figures(result: Result) -> Callable[[Result], str]:
    """The drain in the console's words, which name the rates that decided it."""
    subscriptions = result.get("catchUp", {}).get("catchUpSubscriptionsPerTopic", 1)
    return lambda drain: describe_drain(drain, subscriptions)


def _verdicts(result: Result) -> str:
    """The run's own verdicts, one row each: pass, FAIL or not judged, and the figures behind
    it (or why it was not judged). A result written before verdicts existed shows nothing."""
    verdicts = result.get("verdicts")
    if not verdicts:
        return ""
    rows = []
    for name, block, answer, figures in (
        ("rate held", "rate", "held", _rate_figures),
        ("consumers kept up", "consumers", "keptUp", _consumer_figures),
        ("drain completed", "drain", "completed", _drain_figures(result)),
    ):
        if block not in verdicts:
            continue  # no drain: not a catch-up run
        verdict = verdicts[block]
        judged = verdict[answer]
        outcome = {True: "pass", False: "FAIL", None: "not judged"}[judged]
        bare = set(verdict) <= {answer, "reason"}  # not judged, or failed for a reason alone
        shown = verdict["reason"] if bare else figures(verdict)
        css = ' class="fail"' if judged is False else ""
        rows.append(f"<tr><td>{name}</td><td{css}>{outcome}</td><td>{_text(shown)}</td></tr>")
    return (
        '<table class="verdicts"><caption>Verdicts</caption>'
        "<thead><tr><th>verdict</th><th>outcome</th><th>figures</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _slo(result: Result) -> str:
    """The ``--slo`` verdict: passed or failed, then every threshold with its measured value."""
    verdict = result.get("slo")
    if not verdict:
        return ""
    rows = []
    for check in verdict["checks"]:
        measured = check["measured"]
        shown = (
            "not measured" if measured is None else f"{measured:.6g} {check['unit'] or ''}".strip()
        )
        outcome = "pass" if check["passed"] else "FAIL"
        rows.append(
            f"<tr><td>{_text(check['expr'])}</td><td>{_text(shown)}</td><td>{outcome}</td></tr>"
        )
    failed = sum(not check["passed"] for check in verdict["checks"])
    summary = (
        f'<p class="slo-pass">SLO passed: {len(rows)} threshold(s) met.</p>'
        if verdict["passed"]
        else f'<p class="slo-fail">SLO failed: {failed} of {len(rows)} threshold(s) missed.</p>'
    )
    return (
        f"{summary}<table><thead><tr><th>threshold</th><th>measured</th><th>outcome</th></tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _mean_rate(field: str) -> Callable[[Result], float | None]:
    return lambda result: fmean(result[field]) if result.get(field) else None


def _mb_per_s(field: str) -> Callable[[Result], float | None]:
    def mb(result: Result) -> float | None:
        rate = _mean_rate(field)(result)
        size = result.get("messageSize")
        return None if rate is None or size is None else rate * size / MB

    return mb


def _latency(metric: str, field: str) -> Callable[[Result], float | None]:
    return lambda result: result.get(field) if series.has_latency(result, metric) else None


def _total(field: str) -> Callable[[Result], float | None]:
    return lambda result: result.get(field)


def _summary_rows() -> list[tuple[str, str, str, Callable[[Result], float | None]]]:
    """(group, metric, format, value) for every summary row; a missing value is None."""
    rows = [
        ("throughput (mean of intervals)", "publish msg/s", ",.0f", _mean_rate("publishRate")),
        ("", "publish MB/s", ",.2f", _mb_per_s("publishRate")),
        ("", "consume msg/s", ",.0f", _mean_rate("consumeRate")),
        ("", "consume MB/s", ",.2f", _mb_per_s("consumeRate")),
    ]
    for metric, stem in ((PUBLISH, "PublishLatency"), (END_TO_END, "EndToEndLatency")):
        group = f"{charts.METRIC_NAMES[metric]} latency (ms)"
        for name, suffix in LATENCY_POINTS:
            getter = _latency(metric, f"aggregated{stem}{suffix}")
            rows.append((group if name == "p50" else "", name, ",.3f", getter))
    totals = (("sent", "totalMessagesSent"), ("received", "totalMessagesReceived"))
    totals += (("publish errors", "totalPublishErrors"), ("lost", "totalLost"))
    totals += (("unread (left in the broker)", "totalUnread"),)
    for index, (name, field) in enumerate(totals):
        rows.append(("messages (whole run)" if index == 0 else "", name, ",d", _total(field)))
    return rows


def _cell(value: float | None, fmt: str, baseline: float | None) -> str:
    if value is None:
        return "—"
    shown = format(value, fmt)
    if baseline:  # several results: the change against the first one
        shown += f' <span class="change">({value / baseline - 1:+.1%})</span>'
    return shown


def _summary(results: Sequence[Result]) -> str:
    """Metrics as rows, one column per result, so one table serves one result or a comparison."""
    heads = "".join(
        f"<th>{_text(series.label(r))}{' (incomplete)' if r.get('incomplete') else ''}</th>"
        for r in results
    )
    body = []
    for group, name, fmt, value in _summary_rows():
        values = [value(r) for r in results]
        if all(v is None for v in values) and group.startswith("messages"):
            continue  # OMB's results have no totals: leave the rows out rather than show dashes
        if group:
            body.append(f'<tr class="group"><td colspan="{len(results) + 1}">{group}</td></tr>')
        cells = [_cell(values[0], fmt, None)]
        cells += [_cell(v, fmt, values[0] if len(results) > 1 else None) for v in values[1:]]
        body.append(f"<tr><td>{name}</td>{''.join(f'<td>{c}</td>' for c in cells)}</tr>")
    note = (
        '<p class="note">Latencies are the aggregated percentiles of the measured phase '
        "(warm-up excluded), as Java's HdrHistogram computes them. MB = 2<sup>20</sup> bytes."
        + (" Changes are against the first result." if len(results) > 1 else "")
        + "</p>"
    )
    return (
        f'<table id="summary"><thead><tr><th>metric</th>{heads}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>{note}"
    )


def _chart(name: str, results: Sequence[Result]) -> str:
    svg = charts.render(name, results, "svg").decode("utf-8")
    svg = svg[svg.index("<svg") :]  # drop the XML prolog and doctype: not allowed inline
    return (
        f'<figure class="chart" id="chart-{name}">{svg}'
        f"<figcaption>{CAPTIONS[name]}</figcaption></figure>"
    )


def render_page(paths: Sequence[Path], results: Sequence[Result]) -> str:
    """The whole page for results already loaded from ``paths``."""
    if len(results) == 1:
        title = f"loadgen report: {series.label(results[0])}"
    else:
        title = f"loadgen comparison of {len(results)} results"
    headers = "".join(_header(i, p, r) for i, (p, r) in enumerate(zip(paths, results, strict=True)))
    body = "".join(_chart(name, results) for name in charts.CHARTS)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_text(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{_text(title)}</h1>{headers}<h2>Summary</h2>{_summary(results)}"
        f"<h2>Charts</h2>{body}</body></html>\n"
    )


def write_report(paths: Sequence[Path], out: Path) -> Path:
    """Write the HTML report of the results at ``paths`` to ``out`` (all or nothing)."""
    results = [load_result(path) for path in paths]
    write_text_atomic(out, render_page(paths, results))
    return out


def export_charts(paths: Sequence[Path], directory: Path, fmt: str) -> list[Path]:
    """Write every chart as ``<directory>/<name>.<fmt>`` (png or svg), e.g. for slides."""
    if fmt not in IMAGE_FORMATS:
        raise ConfigError(
            "unknown image format", path="--format", value=fmt, allowed=list(IMAGE_FORMATS)
        )
    results = [load_result(path) for path in paths]
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name in charts.CHARTS:
        target = directory / f"{name}.{fmt}"
        write_bytes_atomic(target, charts.render(name, results, fmt))
        written.append(target)
    return written
