"""Run hooks: what a command's record holds, timeouts that kill the whole pipeline, and where
hooks sit around a run (a failing before_run starts nothing; after_run runs whatever happens)."""

import time
from pathlib import Path

import pytest

import loadgen
from loadgen.base.errors import BrokerUnreachable, ConfigError
from loadgen.running.hooks import (
    OUTPUT_LIMIT,
    HookFailed,
    RunHooks,
    make_hooks,
    run_after,
    run_command,
)

RUN = {
    "name": "hooked",
    "topics": 1,
    "partitionsPerTopic": 1,
    "messageSize": 64,
    "subscriptionsPerTopic": 1,
    "consumerPerSubscription": 1,
    "producersPerTopic": 1,
    "producerRate": 500,
    "testDurationMinutes": 1,
}


def test_a_record_keeps_exit_code_output_and_the_environment_given():
    record = run_command(
        "before_run", 'echo "$LOADGEN_X"; echo err >&2; exit 4', 10, {"LOADGEN_X": "x1"}
    )
    assert (record.exit_code, record.ok) == (4, False)
    assert record.output == "x1\nerr\n" and not record.truncated
    assert record.to_json()["timedOut"] is False


def test_long_output_keeps_its_end():
    record = run_command("after_run", "seq 1 5000", 10, {})
    assert record.truncated and len(record.output) == OUTPUT_LIMIT
    assert record.output.endswith("4999\n5000\n")


def test_a_timeout_kills_the_command_and_what_it_started(tmp_path):
    pid_file = tmp_path / "child.pid"
    started = time.monotonic()
    record = run_command("before_run", f"sleep 30 & echo $! > {pid_file}; wait", 0.5, {})
    assert time.monotonic() - started < 5
    assert record.exit_code is None and record.to_json()["timedOut"] is True
    stat = Path(f"/proc/{int(pid_file.read_text())}/stat")
    deadline = time.monotonic() + 5
    while stat.exists() and _state(stat) != "Z" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not stat.exists() or _state(stat) == "Z"  # gone, or dead and not yet reaped


def _state(stat: Path) -> str:
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return "gone"


def test_after_run_commands_all_run_and_failures_are_recorded():
    hooks = RunHooks(after_run=("exit 1", "echo second"))
    records = run_after(hooks, {})
    assert [r.exit_code for r in records] == [1, 0]


@pytest.mark.parametrize(
    ("before", "after", "timeout", "field"),
    [((" ",), (), 5, "--before-run"), ((), ("",), 5, "--after-run"), ((), (), 0, "--hook-timeout")],
)
def test_empty_commands_and_a_non_positive_timeout_are_config_errors(before, after, timeout, field):
    with pytest.raises(ConfigError) as caught:
        make_hooks(before, after, timeout)
    assert caught.value.path == field


def test_hooks_are_recorded_in_the_result_in_order(tmp_path):
    log = tmp_path / "log"
    result = loadgen.run(
        RUN,
        loadgen.driver("memory"),
        duration=1,
        warmup=0,
        before_run=[f"echo before $LOADGEN_WORKLOAD >> {log}"],
        after_run=[f"echo after $LOADGEN_RUN_STATUS >> {log}", "echo PASSWORD=hunter2"],
    )
    assert log.read_text() == "before hooked\nafter complete\n"
    records = result.document["run"]["hooks"]
    assert [(r["phase"], r["exitCode"]) for r in records] == [
        ("before_run", 0),
        ("after_run", 0),
        ("after_run", 0),
    ]
    assert records[2]["output"] == "PASSWORD=<redacted>"  # the result never holds a secret
    assert result.sent > 0


def test_a_failing_before_run_starts_nothing_and_runs_no_after_run(tmp_path):
    marker = tmp_path / "after"
    with pytest.raises(HookFailed) as caught:
        loadgen.run(
            RUN,
            loadgen.driver("memory"),
            duration=1,
            before_run=["echo cannot drop caches >&2; exit 7"],
            after_run=[f"touch {marker}"],
        )
    assert caught.value.exit_code == 2
    assert "exit 7" in str(caught.value) and "cannot drop caches" in str(caught.value)
    assert not marker.exists()


def test_after_run_runs_when_the_run_itself_fails(tmp_path):
    log = tmp_path / "log"
    # RabbitMQ reports a refused connection at once (Kafka and Pulsar retry for 10 s)
    unreachable = loadgen.driver("rabbitmq", amqpUris=["amqp://guest:guest@127.0.0.1:1/%2F"])
    with pytest.raises(BrokerUnreachable):
        loadgen.run(
            RUN,
            unreachable,
            duration=1,
            before_run=[f"echo before >> {log}"],
            after_run=[f"echo after $LOADGEN_RUN_STATUS >> {log}"],
        )
    assert log.read_text() == "before\nafter failed\n"
