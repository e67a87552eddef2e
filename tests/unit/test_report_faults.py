"""The HTML report of a run with faults: a labelled band per fault on every chart over time, and
a table of what each fault was and did; a result without faults renders as before."""

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest
from tests.unit.test_report import MEMORY, chart, workload

from loadgen.report import series
from loadgen.report.charts import TIME_CHARTS
from loadgen.report.html import write_report
from loadgen.result_files.compare import load_result
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one

HOSTILE_COMMAND = "echo '<script>alert(1)</script>' & true"
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def faulted(tmp_path_factory):
    """A real memory-broker run with two command faults, the first one's command hostile."""
    faults = [
        {"at": 1, "action": "command", "command": HOSTILE_COMMAND, "for": 0.5},
        {"at": 2.5, "action": "command", "command": "true", "for": 0.5},
    ]
    options = RunOptions(duration_s=4, warmup_s=0, stats_interval_s=0.5)
    out_dir = tmp_path_factory.mktemp("faults")
    chosen = workload(name="chaos", faults=faults)
    return run_one(RunRequest(chosen, MEMORY, options, out_dir=out_dir)).path


@pytest.fixture(scope="module")
def page(faulted):
    return write_report([faulted], faulted.with_name("chaos.html")).read_text()


def rewritten(path, tmp_path, change, name="changed"):
    """The path of ``path``'s result after ``change(document)``."""
    document = load_result(path)
    change(document)
    changed = tmp_path / f"{name}.json"
    changed.write_text(json.dumps(document))
    return changed


def svg_of(page, chart_id):
    markup = chart(page, chart_id)
    return ET.fromstring(markup[markup.index("<svg") : markup.index("</svg>") + 6])


def bands(svg):
    """{id: label text} of every fault band in one chart's SVG."""
    groups = {g.get("id"): g for g in svg.iter(f"{SVG}g") if g.get("id", "").startswith("fault-")}
    return {
        gid: "".join(groups[f"{gid}-label"].itertext()).strip()
        for gid in groups
        if not gid.endswith("-label")
    }


class Tables(HTMLParser):
    """Every table of a page by id: its rows, each a list of cell texts."""

    def __init__(self, page):
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.current: list[list[str]] | None = None
        self.cell: list[str] | None = None
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.current = self.tables.setdefault(dict(attrs).get("id") or "", [])
        elif tag == "tr" and self.current is not None:
            self.current.append([])
        elif tag in ("td", "th") and self.current is not None:
            self.cell = []
        elif tag == "br" and self.cell is not None:
            self.cell.append(" ")

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None and self.current is not None:
            self.current[-1].append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif tag == "table":
            self.current = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)


def test_every_chart_over_time_shades_each_fault_with_its_label(page):
    for name in TIME_CHARTS:
        found = bands(svg_of(page, f"chart-{name}"))
        panels = 2 if name == "throughput" else 4
        assert len(found) == 2 * panels, name
        assert found[f"fault-band-{name}-p1-r1-f1"] == "fault 1: command"
        assert found[f"fault-band-{name}-p{panels}-r1-f2"] == "fault 2: command"
        assert "Shaded: each fault" in chart(page, f"chart-{name}")
    assert not bands(svg_of(page, "chart-distribution"))  # not over time


def test_a_band_spans_the_fault_from_its_start_to_its_end_in_measured_time(faulted):
    result = load_result(faulted)
    first, second = series.fault_bands(result)
    made = result["faults"]
    # the quickest fault to make is drawn at its at, the other as much later as it started
    assert min(first.start - 1.0, second.start - 2.5) == pytest.approx(0.0)
    assert second.start - first.start == pytest.approx(
        (made[1]["startedAt"] - made[0]["startedAt"]) / 1000
    )
    for band, fault in zip((first, second), made, strict=True):
        assert band.end - band.start == pytest.approx(
            (fault["endedAt"] - fault["startedAt"]) / 1000
        )
        assert 0 <= band.start - fault["at"] < 0.3  # within a poll of when it was due


def test_the_faults_table_shows_what_each_fault_was_and_cost(faulted, page):
    tables = Tables(page).tables
    header, first, second = tables["faults-1"]
    assert header[:4] == ["#", "fault", "at (s)", "for (s)"]
    assert first[0] == "1" and first[1].startswith(f"command {HOSTILE_COMMAND} (exit 0)")
    assert first[2:4] == ["1", "0.5"] and re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}", first[4])
    fault = load_result(faulted)["faults"][0]
    assert first[6] == "0" and first[8:] == ["0", "0"]  # unavailable, lost, duplicated
    if fault["recoverySeconds"] is None:  # the memory broker's µs latencies may jitter past 2x
        assert first[7] == f"not shown: {fault['recoveryReason']}"
    else:
        assert float(first[7]) == pytest.approx(fault["recoverySeconds"])
    assert second[:4] == ["2", "command true (exit 0)", "2.5", "0.5"]
    windows = tables["fault-windows-1"]
    assert windows[0][:2] == ["window", "intervals"]
    assert [row[0] for row in windows[1:]] == [
        "fault 1: command", "before", "during", "after",
        "fault 2: command", "before", "during", "after",
    ]  # fmt: skip
    before = fault["windows"]["before"]
    assert windows[2][1] == str(before["intervals"])
    assert float(windows[2][2]) == pytest.approx(before["seconds"])
    assert windows[2][3:6] == [
        f"{before['publishRate']:,.0f}",
        f"{before['consumeRate']:,.0f}",
        f"{before['publishLatency']['99pct']:,.3f}",
    ]
    verdicts = tables[""]  # the verdicts table has no id
    outcome = {True: "pass", False: "FAIL", None: "not judged"}
    recovered = load_result(faulted)["verdicts"]["faults"]["recovered"]
    assert verdicts[-1][:2] == ["recovered from faults", outcome[recovered]]


def test_a_command_from_the_result_is_escaped(page):
    assert "echo &#x27;&lt;script&gt;alert(1)&lt;/script&gt;&#x27; &amp; true" in page
    assert "<script" not in page.lower()


def test_hostile_fault_text_is_escaped_in_the_table_and_the_chart_labels(faulted, tmp_path):
    def hostile(document):
        document["faults"][0].update(target="<b>$x^2$</b>", action="kill")
        ended = document["faults"][1]["endedAt"]
        document["faults"][1] = {  # as a fault whose making failed is written
            "at": 2.5, "action": "pause", "target": "broker:1", "for": 0.5, "node": 1,
            "address": None, "startedAt": None, "endedAt": ended, "commands": [],
            "error": "<img src=x onerror=alert(1)>",
        }  # fmt: skip

    path = rewritten(faulted, tmp_path, hostile)
    page = write_report([path], tmp_path / "hostile.html").read_text()
    assert "<b>" not in page and "<img" not in page
    assert "kill &lt;b&gt;$x^2$&lt;/b&gt;" in page
    assert "not made: &lt;img src=x onerror=alert(1)&gt;" in page
    found = bands(svg_of(page, "chart-throughput"))  # text, not markup or math, in the SVG
    assert found["fault-band-throughput-p1-r1-f1"] == "fault 1: kill <b>$x^2$</b>"
    assert not any(gid.endswith("-f2") for gid in found)  # a fault not made has no band


def test_a_result_without_faults_has_no_band_no_table_and_no_caption(faulted, tmp_path):
    def no_faults(document):
        del document["faults"], document["verdicts"]["faults"]

    path = rewritten(faulted, tmp_path, no_faults)
    page = write_report([path], tmp_path / "plain.html").read_text()
    body = page[page.index("</style>") :]
    assert "fault" not in body.lower()
    for name in TIME_CHARTS:
        assert not bands(svg_of(page, f"chart-{name}"))


def test_several_results_each_shade_their_faults_in_their_colour(faulted, tmp_path):
    plain = rewritten(faulted, tmp_path, lambda document: document.pop("faults"), "plain")
    page = write_report([faulted, plain, faulted], tmp_path / "three.html").read_text()
    found = bands(svg_of(page, "chart-throughput"))
    assert {gid.split("-r")[1][0] for gid in found} == {"1", "3"}
    tables = Tables(page).tables
    assert "faults-1" in tables and "faults-3" in tables and "faults-2" not in tables
    assert "No faults in this run." in page


@pytest.mark.parametrize(
    ("verdict", "shown"),
    [
        (
            {"recovered": True, "seconds": 1.5},
            ["pass", "recovered within 1.5 s of each fault's end"],
        ),
        ({"recovered": False, "reason": "p99 <stayed> above"}, ["FAIL", "p99 <stayed> above"]),
    ],
)
def test_the_faults_verdict_shows_the_longest_recovery_or_why_not(
    faulted, tmp_path, verdict, shown
):
    path = rewritten(
        faulted, tmp_path, lambda document: document["verdicts"].update(faults=verdict)
    )
    page = write_report([path], tmp_path / "judged.html").read_text()
    assert Tables(page).tables[""][-1] == ["recovered from faults", *shown]
    assert "p99 &lt;stayed&gt; above" in page or "<stayed>" not in shown[1]
