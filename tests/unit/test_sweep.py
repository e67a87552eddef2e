"""Sweeps and SLO search: rate lists, bisection, and searches run on the in-process broker."""

import json
from pathlib import Path

import pytest

from loadgen.base.errors import ConfigError
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.report import sweep as sweep_report
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import run_one
from loadgen.spec import Workload
from loadgen.studies import sweep

MEMORY = DriverSpec(name="Memory", kind="memory")


def test_rates_are_a_list_or_an_evenly_spaced_range():
    assert sweep.parse_rates("1k, 5k,10000", "--rates") == [1_000, 5_000, 10_000]
    assert sweep.parse_rates("10k:100k:4", "--rates") == [10_000, 40_000, 70_000, 100_000]
    assert sweep.parse_search("10k:1M", "--search") == (10_000, 1_000_000)


@pytest.mark.parametrize("text", ["", "1k,,2k", "fast", "10k:1k:3", "1k:10k:1", "0,5"])
def test_bad_rate_lists_name_the_option_and_what_is_allowed(text):
    with pytest.raises(ConfigError) as caught:
        sweep.parse_rates(text, "--rates")
    assert caught.value.path == "--rates"
    assert "START:STOP:COUNT" in str(caught.value)


@pytest.mark.parametrize("text", ["10k", "1k:2k:3k", "5k:1k", "1k:1k"])
def test_bad_search_ranges_are_refused(text):
    with pytest.raises(ConfigError) as caught:
        sweep.parse_search(text, "--search")
    assert caught.value.path == "--search"


def threshold(limit, tried):
    def passes(rate):
        tried.append(rate)
        return rate <= limit

    return passes


def test_bisection_tries_the_ends_first_then_closes_in_geometrically():
    tried = []
    best = sweep.highest_passing(threshold(37_000, tried), 1_000, 100_000, 20, 0.01)
    assert tried[:3] == [100_000, 1_000, 10_000]  # sqrt(1k * 100k)
    assert 37_000 / 1.01 <= best <= 37_000
    assert len(tried) <= 20


def test_bisection_spends_at_most_its_run_budget():
    tried = []
    best = sweep.highest_passing(threshold(37_000, tried), 1_000, 100_000, 4, 0.01)
    assert tried == [100_000, 1_000, 10_000, 31_623]
    assert best == 31_623


def test_bisection_answers_the_high_end_or_nothing_without_bisecting():
    tried = []
    assert sweep.highest_passing(threshold(10**9, tried), 1_000, 100_000, 7, 0.05) == 100_000
    assert tried == [100_000]
    tried.clear()
    assert sweep.highest_passing(threshold(10, tried), 1_000, 100_000, 7, 0.05) is None
    assert tried == [100_000, 1_000]


def point(rate, sent, p99, incomplete=False):
    latencies = {m: {"p50": p99 / 2, "p99": p99, "p99.9": p99 * 2} for m in ("publish", "e2e")}
    return sweep.SweepPoint(rate, sent, latencies, f"r{rate}.json", incomplete)


def test_a_rate_passes_only_complete_sustained_and_under_the_bound():
    slo = sweep.Slo("e2e", 5.0)
    assert slo.failure(point(1000, 990, 4.9)) is None
    assert slo.failure(point(1000, 990, 5.1)) == "e2e p99 5.100 ms > 5 ms"
    assert "under 95% of 1,000" in slo.failure(point(1000, 900, 1.0))
    assert slo.failure(point(1000, 1000, 1.0, incomplete=True)) == "the run did not complete"


def workload():
    return Workload.model_validate(
        {
            "name": "search",
            "topics": 1,
            "partitionsPerTopic": 2,
            "messageSize": 64,
            "useRandomizedPayloads": True,
            "randomizedPayloadPoolSize": 1,
            "subscriptionsPerTopic": 1,
            "consumerPerSubscription": 1,
            "producersPerTopic": 1,
            "producerRate": 1,
            "testDurationMinutes": 1,
            "warmupDurationMinutes": 0,
        }
    )


def measure_on_memory(tmp_path):
    options = RunOptions(duration_s=0.5, warmup_s=0, stats_interval_s=0.5)

    def measure(rate):
        return sweep.measure_point(
            workload(), rate, lambda at: run_one(RunRequest(at, MEMORY, options, out_dir=tmp_path))
        )

    return measure


def test_slo_search_on_the_memory_broker_finds_where_it_stops_keeping_up(tmp_path):
    # 50M msg/s is far beyond one Python process: the top fails on rate, the bottom passes
    found = sweep.search(
        measure_on_memory(tmp_path), sweep.Slo("publish", 1000.0), 1_000, 50_000_000, 4, 0.05
    )
    assert [p.target_rate for p in found.points][:2] == [50_000_000, 1_000]
    assert len(found.points) == 4
    passed = [p for p in found.points if p.failed_because is None]
    failed = [p for p in found.points if p.failed_because is not None]
    assert found.highest_rate == max(p.target_rate for p in passed)
    assert all(p.target_rate > found.highest_rate for p in failed)
    assert all("under 95%" in p.failed_because for p in failed)
    for p in found.points:  # each point is one result file on disk, named after its rate
        assert (
            json.loads(Path(p.result).read_text())["workload"] == f"search rate {p.target_rate:.0f}"
        )
    summary = sweep.sweep_document("search", "Memory", found.points, found)
    assert summary["slo"]["highestRate"] == found.highest_rate
    table = sweep_report.table_text(summary)
    assert f"highest rate meeting publish p99 <= 1000 ms: {found.highest_rate:,.0f}" in table
    assert table.count("fails: ") == len(failed)


def test_a_sweep_point_carries_the_run_percentiles(tmp_path):
    p = measure_on_memory(tmp_path)(2_000)
    document = json.loads(Path(p.result).read_text())
    assert p.publish_rate == pytest.approx(2_000, rel=0.05)
    assert p.latencies["e2e"]["p99"] == document["aggregatedEndToEndLatency99pct"]
    assert p.latencies["publish"]["p99.9"] == document["aggregatedPublishLatency999pct"]


def test_a_sweep_point_carries_the_run_verdicts(tmp_path):
    p = measure_on_memory(tmp_path)(2_000)
    verdicts = json.loads(Path(p.result).read_text())["verdicts"]
    assert p.verdicts == {
        "rateHeld": verdicts["rate"]["held"],
        "consumersKeptUp": verdicts["consumers"]["keptUp"],
    }  # no drainCompleted: not a catch-up run
    document = p.to_json()
    assert document["rateHeld"] == verdicts["rate"]["held"] and "drainCompleted" not in document


def judged(rate, **verdicts):
    return sweep.SweepPoint(**{**vars(point(rate, rate, 1.0)), "verdicts": verdicts})


def test_the_sweep_table_marks_each_rate_ok_or_what_failed(tmp_path):
    points = [
        judged(1_000, rateHeld=True, consumersKeptUp=True),
        judged(2_000, rateHeld=True, consumersKeptUp=False),
        judged(3_000, rateHeld=False, consumersKeptUp=False, drainCompleted=False),
        judged(4_000, rateHeld=None, consumersKeptUp=None),
        point(5_000, 5_000, 1.0),  # a summary written before verdicts
    ]
    summary = sweep.sweep_document("marks", "Memory", points)
    assert (
        summary["points"][2]["drainCompleted"] is False and "rateHeld" not in summary["points"][4]
    )
    head, *rows = sweep_report.table_text(summary).splitlines()[1:]
    assert head.split()[-1] == "verdict"
    marks = [row.split()[8:] for row in rows]  # after the two rates and six latencies
    assert marks == [["ok"], ["behind"], ["rate,behind,drain"], ["n/a"], []]
    page = sweep_report.write_html(summary, tmp_path / "sweep.html").read_text()
    assert "<th>verdict</th>" in page and "<td>rate,behind,drain</td>" in page
