from loadgen.report.console import (
    format_aggregate,
    format_clock_correction,
    format_interval,
    format_topic_scaling,
    format_transactions,
)


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


def _result(p50_ms, bound_ms, applied=True):
    pair = {"producerWorker": "a", "consumerWorker": "b", "shiftMs": 250.0, "boundMs": bound_ms}
    return {
        "aggregatedEndToEndLatency50pct": p50_ms,
        "aggregatedEndToEndLatencyUncorrected50pct": p50_ms + 250,
        "run": {
            "clockCorrection": {
                "applied": applied,
                "pairs": [pair],
                "maxShiftMs": 250.0,
                "boundMs": bound_ms,
            }
        },
    }


def test_the_console_says_how_large_the_correction_was_and_warns_when_its_bound_beats_p50():
    quiet = format_clock_correction(_result(7.0, 0.2))
    assert "up to 250.000 ms over 1 worker pair(s), bound +/-0.200 ms" in quiet
    assert "(uncorrected 257.000 ms)" in quiet and "WARNING" not in quiet
    assert "WARNING" in format_clock_correction(_result(0.1, 0.2))
    assert format_clock_correction(_result(7.0, 0.2, applied=False)) is None
    assert format_clock_correction({"run": {}}) is None
    unmeasured = _result(7.0, 0.2)
    del unmeasured["aggregatedEndToEndLatencyUncorrected50pct"]  # no interval reached the end
    assert "uncorrected" not in format_clock_correction(unmeasured)


def _scaling(topic: str, created: int, at_end: int, scalings: int) -> dict:
    return {"topic": topic, "partitionsCreated": created, "partitionsAtEnd": at_end,
            "scalings": scalings}  # fmt: skip


def test_a_line_per_topic_the_broker_rescaled_and_none_for_the_topics_it_left_alone():
    result = {"topicScaling": [_scaling("a", 1, 1, 0), _scaling("b", 1, 3, 1),
                               _scaling("c", 4, 2, 2)]}  # fmt: skip
    assert format_topic_scaling(result) == (
        "scaled: b went from 1 to 3 partitions in 1 scaling\n"
        "scaled: c went from 4 to 2 partitions in 2 scalings"
    )
    assert format_topic_scaling({"topicScaling": [_scaling("a", 2, 2, 0)]}) is None
    assert format_topic_scaling({}) is None


def _transactions(committed: int, aborted: int, abort_p50: float) -> dict:
    latency = {"50pct": 9.9, "99pct": 27.0, "999pct": 49.0, "Max": 49.0}
    return {"transactions": {
        "committed": committed, "aborted": aborted, "messagesWithdrawn": 10 * aborted,
        "abortedMessagesRead": 0, "commitLatency": latency,
        "abortLatency": {**latency, "50pct": abort_p50},
    }}  # fmt: skip


def test_the_transactions_line_gives_abort_latency_only_when_a_transaction_was_aborted():
    assert format_transactions(_transactions(598, 0, 0.0)) == (
        "Transactions: 598 committed (commit p50 9.900 ms, p99 27.000 ms), 0 aborted; "
        "0 messages withdrawn, 0 of them read"
    )
    line = format_transactions(_transactions(5, 2, 3.25))
    assert "2 aborted (abort p50 3.250 ms); 20 messages withdrawn" in line
    assert format_transactions({}) is None
