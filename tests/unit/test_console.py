import numpy as np

from loadgen import hdr
from loadgen.report.console import format_aggregate, format_interval
from loadgen.stats import END_TO_END, PUBLISH, IntervalStats


def stats():
    return IntervalStats(
        start_ms=0,
        end_ms=2_000,
        sent=20_000,
        received=19_000,
        bytes_sent=20_000 * 1024,
        bytes_received=19_000 * 1024,
        send_errors=3,
        histograms={
            PUBLISH: hdr.record_ns(PUBLISH, np.full(100, 1_500_000)),
            END_TO_END: hdr.record_ns(END_TO_END, np.full(100, 4_000_000)),
        },
    )


def test_interval_line_shows_rates_backlog_errors_and_percentiles_in_ms():
    line = format_interval(stats(), backlog=1234, phase="measure")
    assert "[measure]" in line
    assert "10000 msg/s" in line and "9.8 MB/s" in line and "9500 msg/s" in line
    assert "backlog     1234" in line and "err     3" in line
    assert "pub ms p50/p99/p99.9/max 1.500/1.500/1.500/1.500" in line
    assert "e2e ms p50/p99/p99.9/max 4.000/4.000/4.000/4.000" in line


def test_aggregate_has_a_line_per_latency():
    text = format_aggregate(stats())
    assert len(text.splitlines()) == 4
    assert "Aggregated end-to-end" in text and "4.000" in text
