"""The matrix summary's table, CSV and page show each run's verdicts after its result."""

import csv
import io

from loadgen.report import matrix as matrix_report

FIGURES = {
    "publishRate": 1000.0,
    "publishLatency": {"p50": 1.0, "p99": 2.0, "p99.9": 3.0},
    "endToEndLatency": {"p50": 1.5, "p99": 2.5, "p99.9": 3.5},
}


def entry(key, status="complete", **fields):
    measured = FIGURES | {"result": f"{key}.json"} if status != "failed" else {}
    return (
        {"key": key, "repeat": 1, "values": {"producerRate": key}}
        | measured
        | fields
        | {"status": status}
    )


DOCUMENT = {
    "matrix": "verdicts",
    "plan": "plan.yaml",
    "workload": "base.yaml",
    "varied": ["producerRate"],
    "planned": 5,
    "points": [
        entry("1k", rateHeld=True, consumersKeptUp=True),
        entry("2k", rateHeld=False, consumersKeptUp=None),
        entry("3k", rateHeld=True, consumersKeptUp=False, drainCompleted=False),
        entry("4k"),  # a document written before verdicts
        entry("5k", status="failed", error="broker unreachable"),
    ],
}


def test_every_row_ends_with_its_verdict_after_the_result():
    head, body = matrix_report.rows(DOCUMENT)
    assert head[-3:] == ["status", "result", "verdict"]
    assert [row[-1] for row in body] == ["ok", "rate", "behind,drain", "", ""]
    text = matrix_report.table_text(DOCUMENT).splitlines()
    assert text[1].split()[-1] == "verdict" and text[4].split()[-1] == "behind,drain"


def test_the_csv_adds_each_verdict_as_true_false_or_empty_at_the_end():
    rows = list(csv.reader(io.StringIO(matrix_report.csv_text(DOCUMENT))))
    assert rows[0][-7:] == [
        "status",
        "result",
        "verdict",
        "rateHeld",
        "consumersKeptUp",
        "drainCompleted",
        "faultsRecovered",
    ]
    assert [row[-4:] for row in rows[1:]] == [
        ["true", "true", "", ""],
        ["false", "", "", ""],
        ["true", "false", "false", ""],
        ["", "", "", ""],
        ["", "", "", ""],
    ]


def test_the_page_links_each_result_and_shows_its_verdict_beside_it(tmp_path):
    matrix_report.write_files(DOCUMENT, tmp_path / "verdicts.matrix.json", ["producerRate"])
    page = (tmp_path / "verdicts.html").read_text()
    assert "<th>result</th><th>verdict</th>" in page
    assert '<td><a href="3k.json">3k.json</a></td><td>behind,drain</td>' in page
    assert "<td>failed</td><td></td><td></td></tr>" in page  # no result, no verdict
