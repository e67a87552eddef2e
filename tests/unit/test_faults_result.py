"""The result's faults block: each fault as made, framed by its neighbours, with its losses by
the interval that acknowledged them; its verdict and the figures --slo judges."""

import math

import pytest
from tests.unit.test_fault_windows import RATE, at, restart_run

from loadgen.engine.accounting import Accounting
from loadgen.formats.faults import fault_counts, fault_fields, faults_verdict
from loadgen.running import thresholds


def made(start: float, end: float, **extra) -> dict:
    record = {"at": start, "action": "kill", "target": "broker:2", "for": end - start}
    return record | {"node": 2, "startedAt": at(start), "endedAt": at(end), "error": None} | extra


def test_losses_go_to_the_fault_whose_windows_hold_the_interval_that_acknowledged_them():
    accounting = Accounting(0, 0, 3, [], lost_at={at(4): 2, at(9): 1})  # seconds 3 and 8
    [fault] = fault_fields([made(3, 6)], restart_run(), RATE, accounting)
    assert fault["lost"] == 3 and fault["windows"]["during"]["lost"] == 2
    assert fault["windows"]["after"]["lost"] == 1 and fault["windows"]["before"]["lost"] == 0
    assert fault["unavailableSeconds"] == 3.0 and fault["node"] == 2


def test_two_faults_frame_each_other_and_one_not_made_keeps_its_error():
    first, second, never = fault_fields(
        [made(3, 6), made(8, 8.5), {"at": 9, "node": None, "error": "no leader"}],
        restart_run(),
        RATE,
        None,
    )
    assert first["windows"]["after"]["intervals"] == 2  # seconds 6 and 7, up to the next fault
    assert second["windows"]["before"]["intervals"] == 2  # from the first one's end
    assert never == {"at": 9, "node": None, "error": "no leader"} and first["lost"] is None


def test_the_verdict_fails_on_a_fault_not_made_or_not_recovered():
    [fault] = fault_fields([made(3, 6)], restart_run(), RATE, None)
    assert faults_verdict([fault]) == {"recovered": True, "seconds": fault["recoverySeconds"]}
    stuck = fault | {"recoverySeconds": None, "recoveryReason": "publish p99 stayed above"}
    assert faults_verdict([fault, stuck]) == {"recovered": False, "reason": stuck["recoveryReason"]}
    assert faults_verdict([{"error": "boom"}])["recovered"] is False


def test_slo_figures_take_the_worst_fault_and_an_unrecovered_one_fails_any_bound():
    [fault] = fault_fields([made(3, 6)], restart_run(), RATE, None)
    counts = fault_counts([fault, fault | {"recoverySeconds": None, "lost": 4}])
    assert math.isinf(counts["fault.recovery"]) and counts["fault.lost"] is None  # one unknown
    figures = thresholds.Figures({}, fault_counts([fault | {"lost": 0}]))
    checks = thresholds.judge(
        thresholds.parse_all(("fault.recovery<30s", "fault.unavailable<2500ms", "fault.lost==0")),
        figures,
    )
    assert [c.passed for c in checks] == [True, False, True]
    assert checks[1].measured == pytest.approx(3.0 * 1000)  # in the expression's unit, ms


def test_a_command_fault_runs_its_command_and_undo_and_the_result_frames_it(tmp_path):
    from tests.unit.test_report import MEMORY, workload

    from loadgen.running.request import RunOptions, RunRequest
    from loadgen.running.runner import execute

    marker = tmp_path / "undone"
    chosen = workload(
        faults=[{"at": 1, "action": "command", "command": "echo made", "for": 1,
                 "undo": f"echo undone > {marker}"}],
    )  # fmt: skip
    options = RunOptions(duration_s=4, warmup_s=0, stats_interval_s=0.5)
    _, result, _ = execute(RunRequest(chosen, MEMORY, options, out_dir=tmp_path))
    [fault] = result["faults"]
    assert [(c["phase"], c["exitCode"], c["output"].strip()) for c in fault["commands"]] == [
        ("fault", 0, "made"),
        ("fault_undo", 0, ""),
    ]
    assert marker.read_text() == "undone\n"
    assert 1000 <= fault["endedAt"] - fault["startedAt"] < 1500
    assert fault["windows"]["before"]["intervals"] >= 1 and fault["windows"]["after"]["intervals"]
    assert fault["unavailableSeconds"] == 0 and fault["lost"] == 0
    # nothing happened to the broker, but the memory broker's microsecond p99 can jitter past
    # 2x its before window's: judged either way, and a miss says so
    verdict = result["verdicts"]["faults"]
    assert verdict["recovered"] is True or "p99" in verdict["reason"], verdict


def test_a_target_without_a_local_broker_is_refused_before_anything_starts(tmp_path):
    from tests.unit.test_report import MEMORY, workload

    from loadgen.base.errors import ConfigError
    from loadgen.running.request import RunOptions, RunRequest
    from loadgen.running.runner import execute

    chosen = workload(faults=[{"at": 1, "action": "kill", "target": "broker:1", "for": 1}])
    with pytest.raises(ConfigError) as error:
        execute(RunRequest(chosen, MEMORY, RunOptions(duration_s=4), out_dir=tmp_path))
    assert error.value.path == "faults.0.target" and not list(tmp_path.iterdir())
