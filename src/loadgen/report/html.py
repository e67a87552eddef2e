"""``loadgen report``: one self-contained HTML page for one result, or several side by side.

The page needs no network and no JavaScript: charts are inline SVG, styles are inline, so it
can be mailed, archived next to the result or opened on an air-gapped machine. Every string
that comes from a result file is escaped, because a workload name is user input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from statistics import fmean
from typing import Any

from loadgen.base.errors import ConfigError
from loadgen.base.files import write_bytes_atomic, write_text_atomic
from loadgen.engine.outcome import describe_drain
from loadgen.engine.stats import END_TO_END, PUBLISH
from loadgen.formats.fault_windows import RECOVERY_LATENCY_FACTOR, RECOVERY_RATE_SHARE, recovered
from loadgen.formats.json_lines import MB
from loadgen.report import charts, series
from loadgen.report.shape import shape_rows
from loadgen.result_files.compare import describe_fault, load_result

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
FAULTS_CAPTION = " Shaded: each fault, from its start to its end (see Faults)."
WINDOWS = ("before", "during", "after")

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
h3 { font-size: 15px; margin: 20px 0 4px; border-left: 6px solid var(--color); padding-left: 8px;
     overflow-wrap: anywhere; }
table.faults, table.fault-windows { width: 100%; }
table.faults th, table.fault-windows th { overflow-wrap: normal; }
table.faults td:nth-child(2), table.faults th:nth-child(2) { text-align: left; }
table.faults td:nth-child(2) { overflow-wrap: anywhere; }
table.faults td.fail { color: #a50e0e; font-weight: bold; }
table.faults td.reason { text-align: left; max-width: 260px; }
table.faults code { font-size: 12px; }
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


def _recovery_figures(faults: Result) -> str:
    return f"recovered within {_seconds(faults['seconds'])} s of each fault's end"


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
        ("recovered from faults", "faults", "recovered", _recovery_figures),
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


def _seconds(value: float) -> str:
    """At most three decimals, no trailing zeros: 7, 0.998, 1,234.5."""
    return f"{value:,.3f}".rstrip("0").rstrip(".")


def _clock(epoch_ms: int | None) -> str:
    if epoch_ms is None:
        return "—"
    return datetime.fromtimestamp(epoch_ms / 1000, UTC).strftime("%H:%M:%S.%f")[:-3]


def _count(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _fault_cell(fault: Result) -> str:
    """What the fault was: action and node, the node's address, each command it ran."""
    parts = [_text(describe_fault(fault))]
    if fault.get("address"):
        parts.append(f"at {_text(fault['address'])}")
    for command in fault.get("commands") or []:
        ended = "timed out" if command.get("timedOut") else f"exit {command.get('exitCode')}"
        parts.append(f"<code>{_text(command.get('command', ''))}</code> ({_text(ended)})")
    return "<br>".join(parts)


def _recovery_cell(fault: Result) -> str:
    """Seconds until the run was shown recovered, or why it was not (or the fault not made)."""
    if fault.get("error") and "windows" not in fault:
        return f'<td class="fail reason">not made: {_text(fault["error"])}</td>'
    if fault.get("recoverySeconds") is not None:
        return f"<td>{_seconds(fault['recoverySeconds'])}</td>"
    failed = ' class="fail reason"' if recovered(fault) is False else ' class="reason"'
    return f"<td{failed}>not shown: {_text(fault.get('recoveryReason') or 'unknown')}</td>"


def _fault_row(number: int, fault: Result) -> str:
    lasting = fault.get("for")
    unavailable = fault.get("unavailableSeconds")
    cells = [
        f"<td>{number}</td>",
        f"<td>{_fault_cell(fault)}</td>",
        f"<td>{_seconds(fault['at'])}</td>",
        f"<td>{'—' if lasting is None else _seconds(lasting)}</td>",
        f"<td>{_clock(fault.get('startedAt'))}</td>",
        f"<td>{_clock(fault.get('endedAt'))}</td>",
        f"<td>{'—' if unavailable is None else _seconds(unavailable)}</td>",
        _recovery_cell(fault),
        f"<td>{_count(fault.get('lost'))}</td>",
        f"<td>{_count(fault.get('duplicated'))}</td>",
    ]
    if fault.get("error") and "windows" in fault:  # made, then its undo failed
        cells[1] = f"<td>{_fault_cell(fault)}<br>failed: {_text(fault['error'])}</td>"
    return f"<tr>{''.join(cells)}</tr>"


def _p99(latency: Result | None) -> str:
    return "none" if latency is None else f"{latency['99pct']:,.3f}"


def _window_rows(number: int, fault: Result) -> list[str]:
    """The fault's before, during and after windows, one row each."""
    title = f"fault {number}: {_text(describe_fault(fault))}"
    rows = [f'<tr class="group"><td colspan="8">{title}</td></tr>']
    for name in WINDOWS:
        window = fault["windows"][name]
        if not window["intervals"]:
            rows.append(f'<tr><td>{name}</td><td>0</td><td colspan="6">no interval</td></tr>')
            continue
        figures = (
            f"{window['intervals']:,}",
            _seconds(window["seconds"]),
            f"{window['publishRate']:,.0f}",
            f"{window['consumeRate']:,.0f}",
            _p99(window["publishLatency"]),
            _p99(window["endToEndLatency"]),
            f"{window['errors']:,}",
        )
        rows.append(f"<tr><td>{name}</td>{''.join(f'<td>{f}</td>' for f in figures)}</tr>")
    return rows


def _result_faults(index: int, result: Result, several: bool) -> str:
    """The tables of one result's faults: what each was and cost, then its three windows."""
    faults = result.get("faults") or []
    heading = (
        f'<h3 style="--color: {charts.COLORS[index % len(charts.COLORS)]}">'
        f"{_text(series.label(result))}</h3>"
        if several
        else ""
    )
    if not faults:
        return f'{heading}<p class="note">No faults in this run.</p>'
    rows = [_fault_row(number, fault) for number, fault in enumerate(faults, 1)]
    windows = [
        row
        for number, fault in enumerate(faults, 1)
        if "windows" in fault
        for row in _window_rows(number, fault)
    ]
    table = (
        f'<table class="faults" id="faults-{index + 1}"><thead><tr><th>#</th><th>fault</th>'
        "<th>at (s)</th><th>for (s)</th><th>started (UTC)</th><th>ended (UTC)</th>"
        "<th>unavailable (s)</th><th>recovery (s)</th><th>lost</th><th>duplicated</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
    if windows:
        table += (
            f'<table class="fault-windows" id="fault-windows-{index + 1}"><thead><tr>'
            "<th>window</th><th>intervals</th><th>seconds</th><th>publish msg/s</th>"
            "<th>consume msg/s</th><th>publish p99 (ms)</th><th>end-to-end p99 (ms)</th>"
            f"<th>publish errors</th></tr></thead><tbody>{''.join(windows)}</tbody></table>"
        )
    return heading + table


def _faults(results: Sequence[Result]) -> str:
    """The Faults section, when any result had faults: a table per result."""
    if not any(result.get("faults") for result in results):
        return ""
    tables = "".join(_result_faults(i, r, len(results) > 1) for i, r in enumerate(results))
    note = (
        '<p class="note">Each fault as it was made, and what it did to the load. Unavailable: '
        "the longest run of stats intervals, from the fault's start, in which no publish was "
        "acknowledged. Recovery: from the fault's end to the end of the first interval whose "
        f"publish p99 was within {RECOVERY_LATENCY_FACTOR}× the before window's and whose "
        f"publish rate held {RECOVERY_RATE_SHARE:.0%} of the asked rate (of the before window's "
        "when none was asked). Windows: before runs "
        "from the previous fault's end (or the start), during holds the intervals the fault "
        "overlapped, after runs to the next fault's start (or the end). Lost, duplicated: over "
        "during and after. Figures are to the stats interval.</p>"
    )
    return f"<h2>Faults</h2>{tables}{note}"


def _chart(name: str, results: Sequence[Result]) -> str:
    svg = charts.render(name, results, "svg").decode("utf-8")
    svg = svg[svg.index("<svg") :]  # drop the XML prolog and doctype: not allowed inline
    caption = CAPTIONS[name]
    if name in charts.TIME_CHARTS and any(series.fault_bands(r) for r in results):
        caption += FAULTS_CAPTION
    return (
        f'<figure class="chart" id="chart-{name}">{svg}<figcaption>{caption}</figcaption></figure>'
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
        f"{_faults(results)}<h2>Charts</h2>{body}</body></html>\n"
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
