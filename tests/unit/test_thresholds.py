"""The threshold language: every metric, statistic, unit and operator, and errors that name the
expression and what is allowed."""

import pytest

from loadgen.base import hdr
from loadgen.base.errors import ConfigError
from loadgen.running.thresholds import (
    COUNTS,
    LATENCIES,
    OPERATORS,
    STATS,
    Figures,
    judge,
    parse,
    verdict_json,
)

# 1..1000 ms in 1-ms steps: p50 = 500 ms, p99 = 990 ms, max = 1000 ms (within 5 digits)
VALUES_MS = list(range(1, 1001))


def figures(**counts: float | None) -> Figures:
    histograms = {
        metric: hdr.record_ns(metric, [v * 1_000_000 for v in VALUES_MS])
        for metric in set(LATENCIES.values())
    }
    return Figures(histograms, counts)


def measured(text: str, source: Figures) -> float | None:
    [check] = judge((parse(text),), source)
    return check.measured


@pytest.mark.parametrize("name", sorted(LATENCIES))
@pytest.mark.parametrize(
    ("stat", "expected_ms"),
    [
        ("p50", 500),
        ("p75", 750),
        ("p95", 950),
        ("p99", 990),
        ("p99.9", 999),
        ("p99.99", 1000),
        ("max", 1000),
        ("avg", 500.5),
    ],
)
def test_every_latency_statistic_is_the_histograms_figure(name, stat, expected_ms):
    value = measured(f"{name}.{stat}<1000ms", figures())
    assert value == pytest.approx(expected_ms, rel=1e-3)  # 5 significant digits
    assert stat in STATS


@pytest.mark.parametrize(
    ("unit", "scale"), [("us", 1000.0), ("µs", 1000.0), ("ms", 1.0), ("s", 0.001)]
)
def test_units_convert_the_limit_and_the_measured_value(unit, scale):
    threshold = parse(f"e2e.p50<={501 * scale}{unit}")  # p50 is 500.001 ms
    assert threshold.limit == pytest.approx(501_000)  # µs
    [check] = judge((threshold,), figures())
    assert check.measured == pytest.approx(500 * scale, rel=1e-3) and check.passed


@pytest.mark.parametrize(
    ("op", "limit", "passes"),
    [
        ("<", 3, False),
        ("<", 4, True),
        ("<=", 3, True),
        ("<=", 2, False),
        (">", 3, False),
        (">", 2, True),
        (">=", 3, True),
        (">=", 4, False),
        ("==", 3, True),
        ("==", 2, False),
    ],
)
def test_every_operator_compares_measured_to_limit(op, limit, passes):
    assert op in OPERATORS
    [check] = judge((parse(f"errors{op}{limit}"),), figures(errors=3))
    assert (check.measured, check.passed) == (3, passes)


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_every_count_is_judged_and_one_not_measured_fails(name):
    assert judge((parse(f"{name}>=0.5"),), figures(**{name: 0.99}))[0].passed
    [missing] = judge((parse(f"{name} >= 0.5"),), figures(**{name: None}))
    assert not missing.passed and missing.describe() == f"{name} >= 0.5: not measured"


def test_an_empty_histogram_is_not_measured_and_fails():
    empty = Figures({metric: hdr.histogram_for(metric) for metric in LATENCIES.values()}, {})
    [check] = judge((parse("e2e.p99<20ms"),), empty)
    assert check.measured is None and not check.passed


def test_the_verdict_lists_every_check_with_its_measured_value():
    checks = judge((parse("e2e.p99<20ms"), parse("publish.max<=2s")), figures())
    assert verdict_json(checks) == {
        "passed": False,
        "checks": [
            {
                "expr": "e2e.p99<20ms",
                "measured": pytest.approx(990, rel=1e-3),
                "unit": "ms",
                "passed": False,
            },
            {
                "expr": "publish.max<=2s",
                "measured": pytest.approx(1.0, rel=1e-3),
                "unit": "s",
                "passed": True,
            },
        ],
    }
    assert checks[0].describe().startswith("e2e.p99<20ms: measured 99")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("e2e.p99<20", "a latency needs a unit"),
        ("e2e.p98<20ms", "needs one of p50"),
        ("e2e<20ms", "needs one of p50"),
        ("e2e.p99<20h", "a latency needs a unit"),
        ("latency.p99<20ms", "unknown metric 'latency'"),
        ("lost==0ms", "is a count"),
        ("lost.p99==0", "is a count"),
        ("e2e.p99=20ms", "not a threshold"),
        ("e2e.p99<", "not a threshold"),
        ("", "not a threshold"),
    ],
)
def test_a_bad_expression_is_a_config_error_naming_it_and_the_grammar(text, reason):
    with pytest.raises(ConfigError) as caught:
        parse(text, option="--slo")
    message = str(caught.value)
    assert repr(text) in message and reason in message and message.startswith("--slo: ")
    assert "p99.9" in message and "e2e" in message and "<=" in message and "lost" in message
    assert caught.value.exit_code == 2
