"""HdrHistogram interval logs: what Python's hdrh and Java's HistogramLogReader read back."""

import numpy as np
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader

from loadgen.base import hdr
from loadgen.engine.stats import END_TO_END, METRICS, PUBLISH, IntervalStats
from loadgen.formats.hlog import hlog_path, hlog_text, write_hlogs

STARTED_MS = 1_795_400_000_123


def interval(index, values_ns, *, warmup=False):
    start = STARTED_MS + 250 + index * 1000
    return IntervalStats(
        start_ms=start,
        end_ms=start + 1000,
        sent=len(values_ns),
        warmup=warmup,
        histograms={
            PUBLISH: hdr.record_ns(PUBLISH, values_ns),
            END_TO_END: hdr.record_ns(END_TO_END, np.asarray(values_ns) * 3),
        },
    )


def run_intervals():
    rng = np.random.default_rng(5)
    return [
        interval(0, rng.integers(1_000, 9_000_000, 500), warmup=True),
        *(interval(i, rng.lognormal(13, 1, 4_000).astype(np.int64)) for i in range(1, 4)),
    ]


def read_with_hdrh(path, metric):
    reference = HdrHistogram(1, hdr.layout(metric).highest, hdr.SIGNIFICANT_DIGITS)
    reader = HistogramLogReader(str(path), reference)
    found = []
    while (histogram := reader.get_next_interval_histogram()) is not None:
        found.append(histogram)
    return found


def test_hdrh_reads_every_measured_interval_back_as_recorded(tmp_path):
    intervals = run_intervals()
    [publish_log] = [
        p
        for p in write_hlogs(tmp_path / "run.json", intervals, STARTED_MS)
        if p.name == "run.publish.hlog"
    ]
    read = read_with_hdrh(publish_log, PUBLISH)
    measured = [i for i in intervals if not i.warmup]
    assert len(read) == len(measured)  # the warm-up interval is not in the log
    for ours, theirs in zip(measured, read, strict=True):
        histogram = ours.histogram(PUBLISH)
        assert theirs.get_total_count() == histogram.total
        assert (theirs.get_min_value(), theirs.get_max_value()) == (histogram.min, histogram.max)
        again = hdr.decode(PUBLISH, theirs.encode())
        assert np.array_equal(again.index, histogram.index)
        assert np.array_equal(again.counts, histogram.counts)


def test_the_header_carries_start_and_base_time_and_each_line_its_offset():
    text = hlog_text(END_TO_END, run_intervals(), STARTED_MS)
    lines = text.splitlines()
    assert "#[Histogram log format version 1.3]" in lines
    assert any(
        line.startswith("#[StartTime: 1795400000.123 (seconds since epoch)") for line in lines
    )
    assert "#[BaseTime: 1795400000.123 (seconds since epoch)]" in lines
    data = [line for line in lines if line[0].isdigit()]
    assert [line.split(",")[0] for line in data] == ["1.250", "2.250", "3.250"]
    assert all(line.split(",")[1] == "1.000" for line in data)


def test_every_metric_gets_its_log_beside_the_result(tmp_path):
    result = tmp_path / "quick-Kafka-2026-11-23-10-00-00.json"
    paths = write_hlogs(result, run_intervals(), STARTED_MS)
    assert paths == [hlog_path(result, metric) for metric in METRICS]
    assert {p.name for p in paths} == {f"quick-Kafka-2026-11-23-10-00-00.{m}.hlog" for m in METRICS}
    assert all(p.read_text().endswith("\n") for p in paths)


def test_java_reads_the_log_with_the_same_numbers_and_times(tmp_path, java_hdr):
    intervals = run_intervals()
    write_hlogs(tmp_path / "run.json", intervals, STARTED_MS)
    reports = java_hdr.reports("log", str(tmp_path / "run.endToEnd.hlog"))
    measured = [i for i in intervals if not i.warmup]
    assert len(reports) == len(measured)
    for ours, java in zip(measured, reports, strict=True):
        java_hdr.assert_equal(ours.histogram(END_TO_END), java)
        assert java["interval"] == (ours.start_ms, ours.end_ms)
