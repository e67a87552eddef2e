"""The stop budget (loadgen.running.stop): one deadline for every wait after a signal, and a second
signal that exits at once."""

import contextlib
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from loadgen.running import stop


def test_the_waits_after_a_signal_fit_the_budget_and_leave_time_to_write_and_exit():
    assert stop.FLUSH_S + stop.TEARDOWN_S <= stop.STOP_BUDGET_S < 4.0


def test_each_wait_gets_its_cap_or_what_is_left_of_the_budget():
    now = time.monotonic()
    assert stop.Stop(signal.SIGINT, "drain", now).left(1.0) == pytest.approx(1.0)
    spent = stop.Stop(signal.SIGINT, "drain", now - (stop.STOP_BUDGET_S - 0.5))
    assert spent.left(1.5) == pytest.approx(0.5, abs=0.05)
    assert stop.Stop(signal.SIGINT, "drain", now - stop.STOP_BUDGET_S - 1).left(1.5) == 0.0


def test_without_a_signal_a_wait_gets_its_cap():
    assert stop.WATCH.stop is None
    assert stop.left(stop.TEARDOWN_S) == stop.TEARDOWN_S


def test_the_record_names_the_signal_the_phase_and_each_wait():
    stopped = stop.Stop(signal.SIGTERM, "teardown", time.monotonic() - 1.0, {"teardown": 0.5})
    record = stopped.to_json()
    assert record["signal"] == "SIGTERM" and record["phase"] == "teardown"
    assert 1.0 <= record["secondsToStop"] < 2.0 and record["steps"] == {"teardown": 0.5}


STUCK = textwrap.dedent(
    """
    import time
    from loadgen.running import stop
    with stop.handling():
        try:
            print("ready", flush=True)
            time.sleep(60)
        except KeyboardInterrupt:
            print("stopping", flush=True)
            time.sleep(60)  # a teardown that never ends
    """
)


def test_a_second_signal_exits_at_once_with_130():
    child = subprocess.Popen(
        [sys.executable, "-c", STUCK], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline() == "ready\n"
        child.send_signal(signal.SIGTERM)
        assert child.stdout.readline() == "stopping\n"
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        assert child.wait(10) == 130
        assert time.monotonic() - sent < 2.0
        assert "second signal" in child.stderr.read()
    finally:
        child.kill()


def test_no_checkpoint_is_built_after_a_signal():
    heard = []

    class Recorder:
        def on_phase(self, phase, seconds):
            heard.append(phase)

        def on_interval(self, stats, backlog):
            heard.append(backlog)

    listener = stop.UnlessStopped(Recorder())
    listener.on_interval(None, 1)
    stop.WATCH.stop = stop.Stop(signal.SIGINT, "measure", time.monotonic())
    try:
        listener.on_interval(None, 2)
        listener.on_phase("teardown", None)
    finally:
        stop.WATCH.stop = None
    assert heard == [1, "teardown"]


def test_a_signal_a_teardown_kept_from_the_run_stops_the_next_run_before_it_starts():
    """The matrix, sweep and list-of-runs loops all start each run through run_and_show."""
    from loadgen.cli.run import run_and_show

    with stop.handling():
        with contextlib.suppress(KeyboardInterrupt):  # as the teardown does: the result is kept
            signal.raise_signal(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            run_and_show(None, None)  # refused before the request is looked at
    assert stop.WATCH.stop is not None and stop.WATCH.stop.signum == signal.SIGINT
    stop.WATCH.stop = None
