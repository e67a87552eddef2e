"""The HTML report and its charts, on real result files written by short memory-broker runs."""

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from loadgen.base import hdr
from loadgen.base.errors import ConfigError, RunAborted
from loadgen.cli.main import cli
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.listeners import OnInterval
from loadgen.engine.stats import END_TO_END, PUBLISH
from loadgen.report import series
from loadgen.report.html import export_charts, write_report
from loadgen.result_files.compare import load_result
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen.spec import Workload

MEMORY = DriverSpec(name="Memory", kind="memory")
CHART_IDS = ("chart-throughput", "chart-publish-latency", "chart-e2e-latency", "chart-distribution")
HOSTILE = "<script>alert('x')</script> & co"


def workload(**overrides):
    fields = {
        "name": "report test",
        "topics": 1,
        "partitionsPerTopic": 2,
        "messageSize": 256,
        "subscriptionsPerTopic": 1,
        "consumerPerSubscription": 1,
        "producersPerTopic": 1,
        "producerRate": 2000,
        "testDurationMinutes": 1,
        "warmupDurationMinutes": 0,
    }
    return Workload.model_validate(fields | overrides)


def short_run(directory, **overrides):
    options = RunOptions(duration_s=2, warmup_s=0, stats_interval_s=1)
    return run_one(RunRequest(workload(**overrides), MEMORY, options, out_dir=directory)).path


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return tmp_path_factory.mktemp("results")


@pytest.fixture(scope="module")
def hostile(results):
    """A complete run whose workload name is an HTML injection attempt."""
    return short_run(results, name=HOSTILE)


@pytest.fixture(scope="module")
def producer_only(results):
    return short_run(results, name="producer only", subscriptionsPerTopic=0)


@pytest.fixture(scope="module")
def interrupted(results):
    seen = []

    def interrupt_on_second(stats, backlog):
        seen.append(stats)
        if len(seen) == 2:
            raise KeyboardInterrupt

    options = RunOptions(duration_s=30, warmup_s=0, stats_interval_s=1)
    listeners = (OnInterval(interrupt_on_second),)
    with pytest.raises(RunAborted) as aborted:
        run_one(
            RunRequest(
                workload(name="cut short"), MEMORY, options, out_dir=results, listeners=listeners
            )
        )
    return results / aborted.value.result_path


@pytest.fixture(scope="module")
def page(hostile):
    """The report of the complete run, rendered once for the tests that only read it."""
    return write_report([hostile], hostile.with_name("hostile.html")).read_text()


@pytest.fixture
def omb_only(hostile, tmp_path):
    """The same result as OMB itself would write it: no histograms, no run metadata."""
    document = load_result(hostile)
    del document["histograms"], document["run"]
    path = tmp_path / "omb.json"
    path.write_text(json.dumps(document))
    return path


def chart(page, chart_id):
    """The markup of one chart's figure element."""
    start = page.index(f'id="{chart_id}"')
    return page[start : page.index("</figure>", start)]


def test_the_report_holds_every_chart_as_inline_svg(page):
    for chart_id in CHART_IDS:
        assert "<svg" in chart(page, chart_id)
    assert "publish msg/s" in page and "p99.99" in page


def test_the_report_needs_no_network_and_no_script(page):
    assert "<script" not in page.lower() and "<link" not in page.lower()
    assert not re.findall(r'(?:src|href)="(?!#)', page)


def test_strings_from_the_result_are_escaped(page):
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; co" in page
    assert "<script>" not in page


def test_an_incomplete_run_is_flagged_with_its_stop_reason(interrupted, page, tmp_path):
    cut_short = write_report([interrupted], tmp_path / "r.html").read_text()
    assert 'class="incomplete"' in cut_short and "(interrupted)" in cut_short
    assert 'class="incomplete"' not in page


def test_a_passed_slo_verdict_shows_every_threshold_and_its_measured_value(hostile, page, tmp_path):
    document = load_result(hostile)
    document["slo"] = {
        "passed": True,
        "checks": [
            {"expr": "e2e.p99<20ms", "measured": 1.5, "unit": "ms", "passed": True},
            {"expr": "lost==0", "measured": 0, "unit": None, "passed": True},
        ],
    }
    path = tmp_path / "judged.json"
    path.write_text(json.dumps(document))
    judged = write_report([path], tmp_path / "judged.html").read_text()
    assert "SLO passed: 2 threshold(s) met." in judged and 'class="slo-fail"' not in judged
    assert "<td>e2e.p99&lt;20ms</td><td>1.5 ms</td><td>pass</td>" in judged
    assert "<td>lost==0</td><td>0</td><td>pass</td>" in judged
    assert "SLO" not in page  # a run without --slo shows no verdict


def test_distribution_points_are_java_equal_percentiles_of_the_aggregated_histogram(hostile):
    result = load_result(hostile)
    for metric in (PUBLISH, END_TO_END):
        histogram = hdr.decode(metric, result["histograms"][metric]["aggregated"])
        curve = series.distribution(result, metric)
        assert len(curve.x) > 100 and curve.x[0] == 0.0 and 99.9 < curve.x[-1] <= 99.999
        assert list(curve.y) == [hdr.value_at_percentile(histogram, p) / 1000 for p in curve.x]


def test_an_omb_result_renders_from_its_quantile_map_and_ten_second_intervals(omb_only, tmp_path):
    result = load_result(omb_only)
    assert series.interval_seconds(result) == 10.0
    assert series.throughput(result)[0].x[:2] == [10.0, 20.0]
    curve = series.distribution(result, END_TO_END)
    quantiles = result["aggregatedEndToEndLatencyQuantiles"]
    assert curve.x and all(quantiles[repr(p)] == v for p, v in zip(curve.x, curve.y, strict=True))
    page = write_report([omb_only], tmp_path / "omb.html").read_text()
    for chart_id in CHART_IDS:
        assert "<svg" in chart(page, chart_id)
    assert "not a loadgen result" in page


def test_a_run_without_consumers_says_there_is_no_end_to_end_data(producer_only, tmp_path):
    page = write_report([producer_only], tmp_path / "r.html").read_text()
    assert "no end-to-end latency was measured" in chart(page, "chart-e2e-latency")
    assert "no end-to-end latency was measured" in chart(page, "chart-distribution")
    assert "<svg" in chart(page, "chart-publish-latency")


def test_several_results_share_each_chart_and_the_summary_table(hostile, producer_only, tmp_path):
    page = write_report([hostile, producer_only], tmp_path / "r.html").read_text()
    assert page.count('class="result"') == 2
    assert "(no data)" in chart(page, "chart-e2e-latency")  # the producer-only run's legend
    summary = page[page.index('id="summary"') :]
    assert summary.index("&lt;script&gt;") < summary.index("producer only") < summary.index("</tr>")
    assert 'class="change"' in summary


@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_charts_export_as_image_files(hostile, tmp_path, fmt):
    written = export_charts([hostile], tmp_path / "images", fmt)
    names = [path.name for path in written]
    assert names == [
        f"{name}.{fmt}" for name in ("throughput", "publish-latency", "e2e-latency", "distribution")
    ]
    for path in written:
        if fmt == "png":
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        else:
            assert ET.parse(path).getroot().tag == "{http://www.w3.org/2000/svg}svg"


def test_an_unknown_image_format_is_refused(hostile, tmp_path):
    with pytest.raises(ConfigError) as caught:
        export_charts([hostile], tmp_path, "gif")
    assert caught.value.path == "--format"


def test_the_command_writes_the_report_beside_one_result(hostile):
    done = CliRunner().invoke(cli, ["report", str(hostile)])
    assert done.exit_code == 0, done.output
    assert done.output.strip() == str(hostile.with_suffix(".html"))
    assert hostile.with_suffix(".html").is_file()


def test_the_command_compares_several_results_into_report_html_and_images(
    hostile, producer_only, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    args = ["report", str(hostile), str(producer_only), "--images", "img", "--format", "svg"]
    done = CliRunner().invoke(cli, args)
    assert done.exit_code == 0, done.output
    assert done.output.splitlines()[0] == "report.html"
    assert (tmp_path / "report.html").is_file() and len(list((tmp_path / "img").glob("*.svg"))) == 4


def test_the_command_exits_2_on_a_file_that_is_not_a_result(tmp_path):
    workload_file = tmp_path / "workload.json"
    workload_file.write_text(json.dumps({"name": "not a result"}))
    done = subprocess.run(
        [sys.executable, "-m", "loadgen", "report", str(workload_file)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert str(workload_file) in done.stderr and "not an OMB TestResult" in done.stderr
    assert not (tmp_path / "workload.html").exists()


def rewritten(path, tmp_path, change):
    """The report of ``path``'s result after ``change(document)``."""
    document = load_result(path)
    change(document)
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(document))
    return write_report([changed], tmp_path / "changed.html").read_text()


def verdict_rows(page):
    """The rows of the first verdicts table: (name, outcome, figures), markup stripped."""
    table = page[page.index('<table class="verdicts">') :]
    table = table[table.index("<tbody>") : table.index("</table>")]
    return [
        tuple(re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row))
        for row in re.findall(r"<tr>(.*?)</tr>", table)
    ]


FAILED_VERDICTS = {
    "passed": False,
    "rate": {
        "held": False,
        "askedRate": 10_000.0,
        "publishRate": 9_000.4,
        "ratio": 0.90004,
        "tolerance": 0.01,
    },
    "consumers": {
        "keptUp": False,
        "backlogAtStart": 809,
        "backlogAtEnd": 2_577,
        "growth": 1_768,
        "trend": 70.7,
        "allowance": 1_000.0,
        "seconds": 25.0,
    },
    "drain": {
        "completed": False,
        "reason": "stalled",
        "backlogAtStart": 12_000,
        "backlogAtEnd": 9_870,
        "consumeRate": 920.2,
        "publishRate": 2_000.0,
        "windowSeconds": 5.0,
        "timeoutSeconds": 600.0,
    },
}


def test_each_failed_verdict_shows_fail_with_the_figures_that_decided_it(hostile, tmp_path):
    page = rewritten(hostile, tmp_path, lambda document: document.update(verdicts=FAILED_VERDICTS))
    assert "<caption>Verdicts</caption>" in page
    assert page.index('class="verdicts"') < page.index('id="summary"')  # near the top
    rate, consumers, drain = verdict_rows(page)
    assert rate == ("rate held", "FAIL", "9,000 of 10,000 msg/s asked (90.00 %, tolerance 1 %)")
    assert consumers == (
        "consumers kept up",
        "FAIL",
        "backlog 809 → 2,577 in 25 s, trend +71 msg/s, allowance 1,000",
    )
    assert drain[:2] == ("drain completed", "FAIL")
    assert all(figure in drain[2] for figure in ("920 msg/s", "2,000 msg/s", "9,870"))
    assert page.count('<td class="fail">FAIL</td>') == 3


def test_a_verdict_not_judged_or_failed_without_figures_shows_its_reason_escaped(hostile, tmp_path):
    def no_figures(document):
        document["verdicts"] = {
            "passed": False,
            "rate": {"held": None, "reason": "no fixed producerRate <discovery> & co"},
            "consumers": {"keptUp": False, "reason": "the catch-up drain did not come"},
        }

    page = rewritten(hostile, tmp_path, no_figures)
    assert verdict_rows(page) == [
        ("rate held", "not judged", "no fixed producerRate &lt;discovery&gt; &amp; co"),
        ("consumers kept up", "FAIL", "the catch-up drain did not come"),
    ]


def test_a_run_shows_its_own_verdicts_and_a_result_without_them_renders_as_before(
    hostile, producer_only, page, tmp_path
):
    rows = verdict_rows(page)
    assert [name for name, _, _ in rows] == ["rate held", "consumers kept up"]  # no drain
    assert "of 2,000 msg/s asked" in rows[0][2]
    alone = write_report([producer_only], tmp_path / "alone.html").read_text()
    assert verdict_rows(alone)[1] == ("consumers kept up", "not judged", "no consumers")
    judged = rewritten(hostile, tmp_path, lambda document: None)
    before = rewritten(hostile, tmp_path, lambda document: document.pop("verdicts"))
    assert 'class="verdicts"' not in before and "Verdicts" not in before
    assert re.sub(r'<table class="verdicts">.*?</table>', "", judged) == before


@pytest.mark.parametrize(
    ("reason", "completed", "outcome", "words"),
    [
        ("drained", True, "pass", "drained 12,000 messages"),
        ("timeout", False, "FAIL", "600-s timeout"),
    ],
)
def test_the_drain_verdict_says_how_the_drain_ended(
    hostile, tmp_path, reason, completed, outcome, words
):
    drain = FAILED_VERDICTS["drain"] | {"reason": reason, "completed": completed}
    page = rewritten(
        hostile,
        tmp_path,
        lambda document: document.update(verdicts={"passed": True, "drain": drain}),
    )
    [(name, shown, figures)] = verdict_rows(page)
    assert (name, shown) == ("drain completed", outcome) and words in figures
