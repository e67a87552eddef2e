"""The workload-file examples: tailing, catch-up, matrix, sweep, rate profile, secured driver,
faults."""

import json

import pytest

from harness.rates import skip_if_host_busy

pytestmark = pytest.mark.e2e


def test_tailing_receives_every_message_and_holds_the_rate(example):
    done = example.run(
        "loadgen", "run", "-d", example.memory, example.examples / "01-tailing/tailing.yaml",
        "--stats-interval", "1s", "-o", "results/tailing",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [doc] = example.results("results/tailing")
    assert example.exact(doc)
    if not doc["verdicts"]["rate"]["held"]:
        skip_if_host_busy(doc, "the tailing example's rate")
    said = done.stdout + done.stderr  # the verdict lines are for people: on stderr
    assert "rate: held" in said and "consumers: kept up" in said
    assert doc["verdicts"]["passed"] and doc["verdicts"]["rate"]["held"]
    assert len(doc["publishRate"]) >= 3  # a stats line per second over 3 measured seconds


def test_catch_up_builds_the_backlog_then_drains_it(example):
    done = example.run(
        "loadgen", "run", "-d", example.memory, example.examples / "02-catch-up/catch-up.yaml",
        "--stats-interval", "1s", "-o", "results/catch-up",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "drain: completed" in done.stderr
    [doc] = example.results("results/catch-up")
    catch_up = doc["catchUp"]
    assert catch_up["targetReached"] and catch_up["drained"]
    assert catch_up["backlogMessages"] >= catch_up["backlogTargetMessages"]
    # the drain reads the backlog faster than the producers add to it
    assert catch_up["drainRate"] > catch_up["phases"]["steady"]["publishRate"]
    assert doc["verdicts"]["drain"]["completed"] is True
    assert example.exact(doc)


@pytest.mark.long  # four runs: with the other long runs
def test_matrix_runs_each_point_once_and_writes_the_summary(example):
    plan = example.examples / "03-matrix/plan.yaml"
    listed = example.run("loadgen", "matrix", plan, "--dry-run")
    assert listed.returncode == 0, listed.stderr
    done = example.run(
        "loadgen", "matrix", plan, "--stats-interval", "1s", "--no-report", "-o", "results/matrix"
    )
    assert done.returncode == 0, done.stderr
    docs = example.results("results/matrix")
    summary = json.loads((example.cwd / "results/matrix/size-rate.matrix.json").read_text())
    assert len(docs) == len(summary["points"]) == 4
    assert {entry["status"] for entry in summary["points"]} == {"complete"}
    points = {(e["values"]["producerRate"], e["values"]["messageSize"]) for e in summary["points"]}
    assert points == {("1k", 256), ("1k", "4KiB"), ("4k", 256), ("4k", "4KiB")}
    assert all(example.exact(doc) for doc in docs)
    assert (example.cwd / "results/matrix/size-rate.html").is_file()
    assert (example.cwd / "results/matrix/size-rate.csv").read_text().count("\n") == 5


def test_sweep_runs_each_rate_and_tabulates_them(example):
    done = example.run(
        "loadgen", "sweep", "-d", example.memory, example.examples / "04-sweep/sweep.yaml",
        "--rates", "2k,10k", "--stats-interval", "1s", "-o", "results/sweep",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [summary_path] = (example.cwd / "results/sweep").glob("rate-sweep-sweep-*.json")
    summary = json.loads(summary_path.read_text())
    assert summary_path.with_suffix(".html").is_file()
    docs = example.results("results/sweep")
    assert sorted(doc["run"]["workload"]["producerRate"] for doc in docs) == [2000, 10000]
    assert all(example.exact(doc) for doc in docs)
    assert len(summary["points"]) == 2
    assert "verdict" in done.stdout


def test_rate_profile_steps_and_ramps_the_publish_rate(example):
    done = example.run(
        "loadgen", "run", "-d", example.memory, example.examples / "10-rate-profile/profile.yaml",
        "--stats-interval", "1s", "-o", "results/rate-profile",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [doc] = example.results("results/rate-profile")
    rates = doc["publishRate"]
    assert rates[0] == pytest.approx(1000, rel=0.05)
    # the last interval ends when sending stops: on a busy host it runs past its second
    assert rates[-1] == pytest.approx(4000, rel=0.15)
    assert any(1100 < rate < 3900 for rate in rates)  # the ramp in between
    assert [segment.get("rampTo") for segment in doc["rateProfile"]["segments"]] == [
        None,
        4000,
        None,
    ]
    assert doc["verdicts"]["rate"]["held"] is None  # no single rate to hold
    assert example.exact(doc)


SECURED = "12-secured-driver/kafka-sasl-ssl.yaml"
PASSWORD = "not-a-real-password-7f3a"


def test_secured_driver_validates_from_the_environment_and_keeps_the_secret(example, test_certs):
    driver = example.examples / SECURED
    env = {
        "KAFKA_BOOTSTRAP_SERVERS": "b1.example:9093,b2.example:9093",
        "KAFKA_PASSWORD": PASSWORD,
        "KAFKA_CA_FILE": str(test_certs.ca),
    }
    valid = example.run("loadgen", "validate", driver, env=env)
    assert valid.returncode == 0, valid.stderr
    assert "ok  driver" in valid.stdout

    unset = example.run("loadgen", "validate", driver, env={**env, "KAFKA_PASSWORD": ""})
    assert unset.returncode == 2
    assert "KAFKA_PASSWORD" in unset.stderr and "commonConfig" in unset.stderr

    no_ca = example.run(
        "loadgen", "validate", driver, env={**env, "KAFKA_CA_FILE": str(example.cwd / "no.pem")}
    )
    assert no_ca.returncode == 2 and "truststore" in no_ca.stderr

    shown = example.run(
        "loadgen", "run", "kafka+ssl://b1.example:9093", "-d", driver, "--dry-run", env=env
    )
    assert shown.returncode == 0, shown.stderr
    assert "sasl.jaas.config=<redacted>" in shown.stdout
    for output in (valid, unset, no_ca, shown):
        assert PASSWORD not in output.stdout + output.stderr


def test_a_command_fault_and_its_undo_run_and_the_result_frames_the_fault(example):
    done = example.run(
        "loadgen", "run", "-d", example.memory, example.examples / "13-faults/faults.yaml",
        "--slo", "faults.recovered", "--slo", "fault.lost==0", "-o", "results/faults",
    )  # fmt: skip
    assert "fault: command at 2s for 2s started" in done.stderr
    assert "fault: command at 2s for 2s ended" in done.stderr
    assert "Fault 1: command at 2s for 2s: unavailable 0.0 s" in done.stderr
    [doc] = example.results("results/faults")
    assert example.exact(doc)
    assert doc["run"]["options"]["stats_interval_s"] == 1.0  # 1-s intervals with faults
    [fault] = doc["faults"]
    assert fault["action"] == "command" and fault["error"] is None and fault["node"] is None
    assert [(c["phase"], c["exitCode"], c["output"].strip()) for c in fault["commands"]] == [
        ("fault", 0, "fault made"),
        ("fault_undo", 0, "undone"),
    ]
    assert fault["endedAt"] - fault["startedAt"] >= 2000  # for: 2s, then the undo
    windows = fault["windows"]
    assert all(windows[name]["intervals"] >= 1 for name in ("before", "during", "after"))
    assert windows["before"]["publishRate"] == pytest.approx(2000, rel=0.05)
    assert fault["unavailableSeconds"] == 0  # the memory broker never stopped acknowledging
    assert fault["lost"] == fault["duplicated"] == fault["outOfOrder"] == 0
    if fault["recoverySeconds"] is None:  # no interval after it with p99 within 2x the before's
        skip_if_host_busy(doc, "the fault's recovery")
    assert done.returncode == 0, done.stderr
    # interval-grained: from the fault's end to the end of the first whole interval after it
    assert 0.9 < fault["recoverySeconds"] < 4.5, fault
    assert doc["verdicts"]["faults"] == {"recovered": True, "seconds": fault["recoverySeconds"]}
    assert [check["passed"] for check in doc["slo"]["checks"]] == [True, True]
    assert "slo: pass faults.recovered: yes" in done.stderr
