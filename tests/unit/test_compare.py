"""``loadgen compare``: deltas, verdicts and exit codes on OMB TestResult documents."""

import json

import pytest
from click.testing import CliRunner

from loadgen.base.errors import ConfigError, exit_code_for
from loadgen.cli.main import cli
from loadgen.result_files.compare import compare, format_faults, parse_fraction


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


def fault(action="kill", target="broker:2", node=2, unavailable=3.0, recovery=5.0, lost=0, **extra):
    figures = {"unavailableSeconds": unavailable, "recoverySeconds": recovery, "lost": lost}
    return {
        "at": 20.0,
        "action": action,
        "target": target,
        "for": 10.0,
        "node": node,
        "startedAt": 1_000,
        "endedAt": 11_000,
        "error": None,
        "windows": {},
        "duplicated": 0,
        "recoveryReason": None,
        **figures,
        **extra,
    }


def fault_lines(baseline, new):
    """The compare command's fault lines: title lines, then figure name -> (base, new, change)."""
    text = format_faults(baseline, new)
    figures = {}
    for line in text.splitlines()[1:]:
        if line.startswith("fault "):
            title = line
        elif line.startswith("  ") and ":" not in line:
            name, *cells = line.split()
            figures[(title.split(":")[0], name)] = tuple(cells[-3:])
    return text, figures


def test_faults_are_lined_up_by_order_with_the_change_of_each_figure():
    baseline = result(faults=[fault(), fault(action="pause", target="leader", node=3)])
    new = result(faults=[fault(unavailable=7.5, recovery=None, lost=4), fault(action="pause")])
    text, figures = fault_lines(baseline, new)
    assert "fault 1: kill node 2\n" in text
    assert "fault 2: pause node 3 (leader) (baseline), pause node 2 (new)" in text
    assert figures[("fault 1", "unavailable")] == ("3.000", "7.500", "+4.500")
    assert figures[("fault 1", "recovery")] == ("5.000", "—", "n/a")
    assert figures[("fault 1", "lost")] == ("0", "4", "+4")
    assert figures[("fault 2", "unavailable")] == ("3.000", "3.000", "+0.000")


def test_a_fault_missing_or_not_made_on_one_side_says_so():
    not_made = {
        "at": 5.0,
        "action": "stop",
        "target": "leader",
        "for": 1.0,
        "node": None,
        "startedAt": None,
        "endedAt": 9,
        "error": "no local node leads partition 0",
    }
    stuck = fault(recovery=None, recoveryReason="publish p99 stayed above 2x")
    text, figures = fault_lines(result(faults=[stuck, fault()]), result(faults=[not_made]))
    assert "fault 1: kill node 2 (baseline), stop leader (new)" in text
    assert "  baseline: not shown recovered: publish p99 stayed above 2x" in text
    assert "  new: not made: no local node leads partition 0" in text
    assert figures[("fault 1", "unavailable")] == ("3.000", "—", "n/a")
    assert "fault 2: kill node 2 (baseline only)" in text


def test_a_run_with_faults_against_one_without_says_so_and_neither_shows_nothing():
    assert format_faults(result(), result(faults=[fault(), fault()])) == (
        "faults: the new run had 2, the baseline run none: nothing to line up"
    )
    assert "the baseline run had 1, the new run none" in format_faults(
        result(faults=[fault()]), result()
    )
    assert format_faults(result(), result()) is None


def test_fault_figures_are_shown_but_never_change_the_exit_code(tmp_path):
    base = write(tmp_path, "a.json", result(faults=[fault()]))
    new = write(tmp_path, "b.json", result(faults=[fault(unavailable=60.0, lost=1000)]))
    done = CliRunner().invoke(cli, ["compare", base, new])
    assert done.exit_code == 0, done.output
    assert "faults, lined up by order (shown, not gated):" in done.output
    assert "+57.000" in done.output and "+1,000" in done.output
    plain = write(tmp_path, "c.json", result())
    done = CliRunner().invoke(cli, ["compare", plain, plain])
    assert done.exit_code == 0 and "fault" not in done.output
