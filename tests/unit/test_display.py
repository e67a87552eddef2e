"""The run displays: live dashboard, plain lines, JSON lines, quiet — each fed the same events."""

import io
import json

from rich.console import Console

from loadgen.report.display import JsonLinesDisplay, LiveDisplay, PlainDisplay, display_for


def test_live_view_shows_phase_progress_rates_and_percentiles_and_keeps_lines_above(make_interval):
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=140, color_system=None)
    with LiveDisplay(console, "quickstart on Kafka") as live:
        live.on_phase("measure", 60.0)
        live.on_interval(make_interval(), backlog=1234)
        console.print(live._render())
        live.finish(make_interval(), "r.json")
    text = out.getvalue()
    assert "quickstart on Kafka" in text
    assert "measure" in text and "0:00 / 1:00" in text
    assert "10,000" in text and "9,500" in text  # publish and consume msg/s
    assert "1.500" in text and "4.000" in text  # publish and e2e ms
    assert "backlog 1,234" in text and "publish errors 3" in text
    # the plain interval line stays in the scrollback, markup characters and all
    assert "[measure] pub     10000 msg/s" in text
    assert "Aggregated end-to-end" in text


def test_live_view_before_any_interval_shows_the_phase_clock_only(make_interval):
    console = Console(file=io.StringIO(), force_terminal=True, width=100, color_system=None)
    live = LiveDisplay(console, "t")
    live.on_phase("setup", None)
    console.print(live._render())
    text = console.file.getvalue()
    assert "setup" in text and "0:00" in text and "msg/s" not in text


def test_json_lines_are_one_parseable_object_per_event(make_interval):
    out = io.StringIO()
    display = JsonLinesDisplay(out)
    display.on_phase("warmup", 15.0)
    display.on_interval(make_interval(warmup=True), backlog=7)
    display.finish(make_interval(), "results/r.json")
    phase, record, summary = (json.loads(line) for line in out.getvalue().splitlines())
    assert phase["type"] == "phase" and phase["phase"] == "warmup" and phase["seconds"] == 15.0
    assert record["type"] == "interval" and record["phase"] == "warmup"
    assert record["publish_rate"] == 10_000 and record["consume_rate"] == 9_500
    assert record["backlog"] == 7 and record["publish_errors"] == 3
    assert record["e2e_ms"] == {"p50": 4.0, "p99": 4.0, "p99.9": 4.0, "max": 4.0}
    assert summary["type"] == "summary" and summary["result"] == "results/r.json"
    assert summary["publish_ms"]["p99.99"] == 1.5


def test_json_summary_of_a_run_cut_before_measuring_has_no_latencies(make_interval):
    out = io.StringIO()
    JsonLinesDisplay(out).finish(None, "partial.json")
    assert json.loads(out.getvalue()) == {
        "type": "summary",
        "publish_ms": None,
        "e2e_ms": None,
        "result": "partial.json",
    }


def test_quiet_prints_only_the_aggregate_and_plain_prints_every_interval(make_interval):
    quiet, plain = io.StringIO(), io.StringIO()
    for display in (PlainDisplay(quiet, quiet=True), PlainDisplay(plain)):
        display.on_interval(make_interval(), backlog=0)
        display.finish(make_interval(), "r.json")
    assert "[measure]" not in quiet.getvalue() and "Aggregated publish" in quiet.getvalue()
    assert "[measure]" in plain.getvalue() and "Aggregated publish" in plain.getvalue()


def test_auto_is_plain_when_the_output_is_not_a_terminal(make_interval):
    assert isinstance(display_for("auto", "t", io.StringIO()), PlainDisplay)
    assert isinstance(display_for("json-lines", "t", io.StringIO()), JsonLinesDisplay)
