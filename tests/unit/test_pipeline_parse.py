"""Landing bytes → rows: every defect becomes a problem row with its reason, nothing raises."""

import json

import pytest

from loadgen.pipeline.tasks.parse import EMPTY, MAX_LINE_BYTES, UNTERMINATED, MetaOnce, parse_file
from loadgen.pipeline.tasks.records import (
    META_DIGEST,
    PROBLEM,
    RAW_LINE,
    RECORD_FIELDS,
    SOURCE_FILE,
)

GOOD = {"kind": "interval", "run_id": "r", "worker_id": "w0", "workers": 1, "seq": 0}


def line(**fields) -> bytes:
    return (json.dumps({**GOOD, **fields}) + "\n").encode()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b'{"run_id": "\xff"}\n', "not UTF-8: invalid start byte at byte 12"),
        (b'{"run_id":\x00 "r"}\n', "NUL byte at offset 10"),
        (b'{"run_id": "r"\n', "not JSON"),
        (b"[1, 2]\n", "JSON of the wrong shape: a list, not an object"),
        (b'"text"\n', "JSON of the wrong shape: a str, not an object"),
        (line(seq="7"), "field 'seq' should be BIGINT, got str '7'"),
        (line(workers=True), "field 'workers' should be INT, got bool"),
        (line(workers=2**31), "field 'workers' is out of range for INT"),
        (line(warmup=1), "field 'warmup' should be BOOLEAN"),
        (b'{"run_id": "\\ud800"}\n', "unpaired surrogate"),
        (b'{"a": ' * 5000 + b"\n", "not JSON"),
    ],
)
def test_a_bad_line_becomes_a_problem_row(content, reason):
    (row,) = parse_file("file:/l/x.json", content)
    assert reason in row[PROBLEM]
    assert row["source_file"] == "file:/l/x.json" and row[RAW_LINE]


def test_a_huge_line_is_refused_unread_and_only_its_start_kept():
    (row,) = parse_file("f", b'{"pad": "' + b"x" * MAX_LINE_BYTES + b'"}\n')
    assert "limit" in row[PROBLEM] and len(row[RAW_LINE]) < 3000


def test_good_lines_keep_every_field_and_an_unterminated_tail_is_a_problem():
    rows = list(parse_file("f", line(seq=1) + b"\n" + line(seq=2) + b'{"seq": 3'))
    assert [row["seq"] for row in rows[:2]] == [1, 2] and rows[0][PROBLEM] is None
    assert rows[2][PROBLEM] == UNTERMINATED and rows[2][RAW_LINE] == '{"seq": 3'
    assert all(set(row) <= {*RECORD_FIELDS, SOURCE_FILE, PROBLEM, RAW_LINE} for row in rows)


def test_an_empty_file_yields_one_problem_row():
    (row,) = parse_file("f", b"")  # when Spark skips it, the sink finds it in the checkpoint
    assert row[PROBLEM] == EMPTY and row[SOURCE_FILE] == "f"


def test_a_task_hands_on_each_runs_meta_once_per_metric_and_a_digest_on_the_rest():
    content = (
        b"".join(
            line(run_id=run, metric=metric, seq=seq, meta=meta)
            for run, meta in [("r1", '{"a": 1}'), ("r2", '{"a": 2}')]
            for seq in range(3)
            for metric in ("publish", "endToEnd")
        )
        + line(run_id="r1", metric="publish", seq=9, meta='{"a": "changed"}')
        + b"[1]\n"
    )
    rows = list(parse_file("f", content))
    meta_once = MetaOnce()
    meta_once(rows[:7])
    meta_once(rows[7:])  # the task's next Arrow batch: still once per task
    handed_on = [(r["run_id"], r["metric"], r["meta"]) for r in rows if r.get("meta")]
    assert handed_on == [
        ("r1", "publish", '{"a": 1}'), ("r1", "endToEnd", '{"a": 1}'),
        ("r2", "publish", '{"a": 2}'), ("r2", "endToEnd", '{"a": 2}'),
        ("r1", "publish", '{"a": "changed"}'),
    ]  # fmt: skip
    digests = {r["run_id"]: r[META_DIGEST] for r in rows[:6]}
    assert len(set(digests.values())) == 1 and digests["r1"] != rows[6][META_DIGEST]
    assert rows[-1][PROBLEM] and META_DIGEST not in rows[-1]  # a problem row is left alone
