from loadgen.report.console import format_aggregate, format_interval


def test_interval_line_shows_rates_backlog_errors_and_percentiles_in_ms(make_interval):
    line = format_interval(make_interval(), backlog=1234, phase="measure")
    assert "[measure]" in line
    assert "10000 msg/s" in line and "9.8 MB/s" in line and "9500 msg/s" in line
    assert "backlog     1234" in line and "err     3" in line
    assert "pub ms p50/p99/p99.9/max 1.500/1.500/1.500/1.500" in line
    assert "e2e ms p50/p99/p99.9/max 4.000/4.000/4.000/4.000" in line


def test_aggregate_has_a_line_per_latency(make_interval):
    text = format_aggregate(make_interval())
    assert len(text.splitlines()) == 5
    assert "Aggregated end-to-end" in text and "4.000" in text
