"""``loadgen compare``: deltas, verdicts and exit codes on OMB TestResult documents."""

import json

import pytest
from click.testing import CliRunner

from loadgen.base.errors import ConfigError, exit_code_for
from loadgen.cli.main import cli
from loadgen.result_files.compare import compare, parse_fraction


def result(rate=1000.0, e2e_p99=10.0, e2e_max=50.0, delay_p99=100.0, **extra):
    return {
        "workload": "w",
        "driver": "Kafka",
        "publishRate": [rate, rate],
        "consumeRate": [rate, rate],
        "aggregatedEndToEndLatency50pct": 2.0,
        "aggregatedEndToEndLatency99pct": e2e_p99,
        "aggregatedEndToEndLatency999pct": 20.0,
        "aggregatedEndToEndLatencyMax": e2e_max,
        "aggregatedPublishDelayLatency99pct": delay_p99,
        **extra,
    }


def rows_by_metric(baseline, new):
    return {row.metric: row for row in compare(baseline, new)}


def test_throughput_may_not_drop_and_latency_may_not_rise_beyond_the_allowance():
    rows = rows_by_metric(result(), result(rate=880.0, e2e_p99=11.5))
    assert rows["publish rate"].change == pytest.approx(-0.12)
    assert rows["publish rate"].regressed(0.10)
    assert not rows["publish rate"].regressed(0.15)
    assert rows["end-to-end p99"].regressed(0.10)  # +15 %
    assert not rows["end-to-end p50"].regressed(0.10)


def test_better_numbers_never_regress():
    rows = rows_by_metric(result(), result(rate=2000.0, e2e_p99=1.0))
    assert not any(row.regressed(0.0) for row in rows.values())


def test_max_latency_and_publish_delay_are_shown_but_never_gate():
    rows = rows_by_metric(result(), result(e2e_max=500.0, delay_p99=900.0))
    assert rows["end-to-end max"].change == pytest.approx(9.0)
    assert not rows["end-to-end max"].regressed(0.1)
    assert not rows["publish delay p99"].regressed(0.1)


def test_only_metrics_present_in_both_results_are_compared():
    ours = result(aggregatedPublishFromIntendedLatency99pct=3.0)
    rows = rows_by_metric(result(), ours)  # an OMB result has no from-intended latency
    assert not any(metric.startswith("publish from intended") for metric in rows)


@pytest.mark.parametrize(("text", "value"), [("10%", 0.1), ("2.5", 0.025), ("0%", 0.0)])
def test_allowances_are_percentages(text, value):
    assert parse_fraction(text) == pytest.approx(value)


def test_a_bad_allowance_names_the_option():
    with pytest.raises(ConfigError) as caught:
        parse_fraction("lots")
    assert caught.value.path == "--max-regression"


def write(tmp_path, name, document):
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return str(path)


def test_the_command_exits_1_and_names_what_regressed(tmp_path):
    base, new = write(tmp_path, "a.json", result()), write(tmp_path, "b.json", result(rate=500))
    done = CliRunner().invoke(cli, ["compare", base, new])
    assert done.exit_code == 1
    assert "publish rate" in done.output and "REGRESSION" in done.output
    assert "regression beyond 10%: publish rate, consume rate" in done.output


def test_the_command_exits_0_within_the_allowance(tmp_path):
    base, new = write(tmp_path, "a.json", result()), write(tmp_path, "b.json", result(rate=950))
    done = CliRunner().invoke(cli, ["compare", base, new, "--max-regression", "10%"])
    assert done.exit_code == 0, done.output
    assert "-5.0%" in done.output


def test_a_file_that_is_not_a_result_is_bad_input(tmp_path):
    base = write(tmp_path, "a.json", result())
    other = write(tmp_path, "workload.json", {"name": "not a result"})
    done = CliRunner().invoke(cli, ["compare", base, other])
    assert isinstance(done.exception, ConfigError)  # main() turns it into exit code 2
    assert exit_code_for(done.exception) == 2
    assert "workload.json" in str(done.exception) and "publishRate" in str(done.exception)
