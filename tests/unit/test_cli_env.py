"""LOADGEN_<OPTION>: every option of run, sweep, matrix, probe and worker from the environment,
with flag > environment > workload file, and bad values refused as the flag's are."""

import json
import os
import socket
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from loadgen.base.errors import ConfigError, exit_code_for
from loadgen.cli.env import variable_for
from loadgen.cli.main import cli
from loadgen.distributed.spawn import (
    announced_url,
    start_worker_process,
    stop_worker_processes,
    worker_environment,
)
from loadgen.running.hooks import hook_env

REPO = Path(__file__).resolve().parents[2]
MEMORY = REPO / "configs/drivers/memory.yaml"
COMMANDS = ("run", "sweep", "matrix", "probe", "worker")

WORKLOAD = """\
name: env
topics: 1
partitionsPerTopic: 1
messageSize: 64
subscriptionsPerTopic: 1
consumerPerSubscription: 1
producersPerTopic: 1
producerRate: 200
testDurationMinutes: 1
warmupDurationMinutes: 1
"""


def visible_options(name):
    command = cli.commands[name]
    return [p for p in command.params if isinstance(p, click.Option) and not p.hidden]


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_has_its_loadgen_variable_shown_in_help(name):
    options = visible_options(name)
    assert options
    for option in options:
        longest = next(opt for opt in option.opts if opt.startswith("--"))
        assert option.envvar == "LOADGEN_" + longest[2:].upper().replace("-", "_"), option.opts
        assert option.show_envvar, option.opts
    help_text = CliRunner().invoke(cli, [name, "--help"]).output
    assert "[env var: LOADGEN_" in help_text


def test_the_variable_is_named_after_the_flag_not_the_python_parameter():
    by_flag = {option.opts[-1]: option for option in visible_options("run")}
    assert variable_for(by_flag["--out"]) == "LOADGEN_OUT"  # parameter: out_dir
    assert variable_for(by_flag["--driver"]) == "LOADGEN_DRIVER"  # parameter: drivers
    assert by_flag["--stats-interval"].envvar == "LOADGEN_STATS_INTERVAL"
    assert by_flag["--token"].envvar == "LOADGEN_TOKEN"


def test_no_option_takes_a_variable_loadgen_sets_for_something_else():
    # LOADGEN_DRIVER is both a hook's driver name and -d; the README says how to clear it
    for_hooks = set(hook_env("id", "workload", "driver", run_status="complete")) - {
        "LOADGEN_DRIVER"
    }
    others = for_hooks | {"LOADGEN_STATE_DIR", "LOADGEN_REQUIRE_BROKERS"}
    for name in COMMANDS:
        assert not {option.envvar for option in visible_options(name)} & others, name


def invoke(args, env):
    return CliRunner().invoke(cli, args, env=env, catch_exceptions=True)


def periods_in(out):
    [result] = [json.loads(p.read_text()) for p in Path(out).glob("*.json")]
    return len(result["publishRate"])


@pytest.fixture
def workload(tmp_path):
    path = tmp_path / "workload.yaml"
    path.write_text(WORKLOAD)
    return path


def test_variables_alone_configure_a_run_and_beat_the_workload_file(workload, tmp_path):
    log = tmp_path / "hooks.log"
    env = {
        "LOADGEN_DRIVER": str(MEMORY),  # repeatable option, one value
        "LOADGEN_OUT": str(tmp_path / "out"),
        "LOADGEN_DURATION": "2s",  # the file says 1 minute
        "LOADGEN_WARMUP": "0",  # the file says 1 minute
        "LOADGEN_STATS_INTERVAL": "1s",  # the option's default is 10s
        "LOADGEN_PROCESSES": "1",
        "LOADGEN_QUIET": "1",  # flags
        "LOADGEN_NO_REPORT": "true",
        "LOADGEN_BEFORE_RUN": f"echo one two >> {log}\n\necho three >> {log}\n",  # one per line
    }
    started = time.monotonic()
    done = invoke(["run", str(workload)], env)
    assert done.exit_code == 0, done.output
    assert time.monotonic() - started < 30  # not the file's 2 minutes
    assert periods_in(tmp_path / "out") == 2
    assert not list((tmp_path / "out").glob("*.html"))
    assert log.read_text() == "one two\nthree\n"


def test_a_flag_beats_its_variable(workload, tmp_path):
    env = {"LOADGEN_DURATION": "3s", "LOADGEN_WARMUP": "0", "LOADGEN_STATS_INTERVAL": "1s"}
    args = ["run", "-d", str(MEMORY), str(workload), "--processes", "1", "--no-report", "-q"]
    done = invoke([*args, "--duration", "1s", "-o", str(tmp_path / "out")], env)
    assert done.exit_code == 0, done.output
    assert periods_in(tmp_path / "out") == 1


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("LOADGEN_PROCESSES", "abc", "'--processes' (from LOADGEN_PROCESSES): 'abc' is not"),
        ("LOADGEN_KEEP_TOPICS", "maybe", "(from LOADGEN_KEEP_TOPICS): 'maybe' is not a valid"),
    ],
)
def test_a_value_click_refuses_exits_2_naming_the_variable(variable, value, expected):
    done = invoke(["run", "missing.yaml"], {variable: value})
    assert done.exit_code == 2
    assert expected in done.output


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"LOADGEN_DURATION": "soon"}, "--duration (from LOADGEN_DURATION): 'soon' is not a dur"),
        ({"LOADGEN_DURATION": "0"}, "--duration (from LOADGEN_DURATION): must be positive"),
        ({"LOADGEN_QUIET": "1", "LOADGEN_PLAIN": "yes"}, "(from LOADGEN_QUIET, LOADGEN_PLAIN)"),
    ],
)
def test_a_value_loadgen_refuses_exits_2_naming_the_variable(env, expected):
    done = invoke(["run", "missing.yaml"], env)  # checked before any file is read
    assert isinstance(done.exception, ConfigError), done.output
    assert exit_code_for(done.exception) == 2
    assert expected in str(done.exception)


def test_a_bad_flag_is_reported_as_the_flag_even_with_the_variable_set():
    done = invoke(["run", "missing.yaml", "--processes", "abc"], {"LOADGEN_PROCESSES": "2"})
    assert done.exit_code == 2
    assert "Invalid value for '--processes': 'abc'" in done.output
    assert "LOADGEN_PROCESSES" not in done.output


def test_an_empty_variable_counts_as_unset():
    done = invoke(["run", "missing.yaml"], {"LOADGEN_PROCESSES": "", "LOADGEN_DURATION": ""})
    assert isinstance(done.exception, ConfigError)
    assert "missing.yaml: file not found" in str(done.exception)


def test_a_worker_the_run_starts_ignores_the_coordinators_variables(monkeypatch):
    with socket.socket() as taken:  # the coordinator's metrics port: no worker may try it
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        monkeypatch.setenv("LOADGEN_METRICS_PORT", str(taken.getsockname()[1]))
        process = start_worker_process("token-for-this-test")
        try:
            assert announced_url(process, time.monotonic() + 30, "worker").startswith("http://")
        finally:
            stop_worker_processes([process])
    assert os.environ["LOADGEN_METRICS_PORT"]  # still set for the coordinator itself


def test_a_worker_the_run_starts_records_with_the_engine_its_coordinator_was_told_to():
    parent = {"LOADGEN_PURE_PYTHON": "1", "LOADGEN_METRICS_PORT": "9100", "PATH": "/bin"}
    env = worker_environment(parent, "a-token", {"TZ": "UTC"})
    assert env == {
        "LOADGEN_PURE_PYTHON": "1",
        "PATH": "/bin",
        "TZ": "UTC",
        "LOADGEN_TOKEN": "a-token",
    }
