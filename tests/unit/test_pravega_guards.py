"""The guards in front of the Pravega client, against a closed port and a silent one on loopback.

No Pravega server is needed. A closed port must fail every entry point in milliseconds; a
port that accepts connections and never answers (a listening socket nobody serves) must fail
within ``client.timeoutSeconds`` instead of the client's own minutes. Panics (the client's
``PanicException`` is a ``BaseException``) become errors naming the controller, and Ctrl-C
while waiting is never swallowed.
"""

import _thread
import os
import signal
import threading
import time

import pytest

from loadgen.base.errors import BrokerUnreachable, DriverError
from loadgen.driver_api import TopicSpec
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.driver_api.local.process import free_port, process_alive
from loadgen_drivers.pravega import Driver, control
from loadgen_drivers.pravega.client import open_manager
from loadgen_drivers.pravega.control import ControlProcess
from loadgen_drivers.pravega.guard import client_call

TIMEOUT_S = 2.0
PAST_DEADLINE_S = 1.0
"""Noticing the deadline (0.1-s slices) and killing the control process, with room to spare.
The silent-port bounds start at the controller's first request: the control process's start
before it (~0.3 s idle, seconds on a loaded machine) is not the controller's time."""


class SimulatedPanic(BaseException):
    """Stands in for ``pyo3_runtime.PanicException``, which also derives from BaseException."""


# operations for the control process (module level, so the child can import them)
def panic(_manager):
    raise SimulatedPanic("Failed to fetch Stream's Head segments from controller")


def child_pid(_manager):
    return os.getpid()


def hang(_manager):
    time.sleep(60)


def die(_manager):
    os._exit(3)


@pytest.fixture
def closed_uri():
    return f"tcp://127.0.0.1:{free_port()}"


@pytest.fixture
def silent_uri(silent):
    return f"tcp://127.0.0.1:{silent.port}"


@pytest.fixture
def driver():
    opened = []

    def make(uri, **fields):
        config = {"client": {"controllerURI": uri, "timeoutSeconds": TIMEOUT_S}, **fields}
        opened.append(Driver.from_config(DriverSpec("Pravega", "pravega", config, "test")))
        return opened[-1]

    yield make
    for each in opened:
        each.close()


@pytest.fixture
def child():
    processes = []

    def make(uri):
        processes.append(ControlProcess(uri))
        return processes[-1]

    yield make
    for each in processes:
        each.close()


ENTRY_POINTS = {
    "check_reachable": lambda d: d.check_reachable(10.0),
    "create_topics": lambda d: d.create_topics([TopicSpec("topic", 4)]),
    "create_producer": lambda d: d.create_producer("topic"),
    "create_consumer": lambda d: d.create_consumer("topic", "sub", lambda *_: None),
}


def timed(call, *args, **kwargs):
    started = time.monotonic()
    with pytest.raises(BaseException) as caught:
        call(*args, **kwargs)
    return caught.value, time.monotonic() - started


@pytest.mark.parametrize("transactions", [False, True], ids=["events", "transactions"])
@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_a_closed_port_fails_every_entry_point_at_once_naming_the_uri(
    driver, closed_uri, entry, transactions
):
    pravega = driver(closed_uri, enableTransaction=transactions)
    error, seconds = timed(ENTRY_POINTS[entry], pravega)
    assert isinstance(error, BrokerUnreachable)
    assert closed_uri in str(error)
    assert seconds < 1.0


@pytest.mark.parametrize("entry", ["check_reachable", "create_topics", "create_consumer"])
def test_a_silent_port_fails_within_the_configured_timeout(driver, silent, silent_uri, entry):
    error, seconds = timed(ENTRY_POINTS[entry], driver(silent_uri))
    assert isinstance(error, BrokerUnreachable)
    assert silent_uri in str(error)
    assert f"no answer within {TIMEOUT_S:g} s" in str(error)
    assert seconds >= TIMEOUT_S
    assert time.monotonic() - silent.wait_for_request(0) < TIMEOUT_S + PAST_DEADLINE_S


def test_check_reachable_keeps_to_a_budget_shorter_than_the_timeout(driver, silent, silent_uri):
    pravega = driver(silent_uri)
    with pytest.raises(BrokerUnreachable, match=r"no answer within 0\.5 s"):
        pravega.check_reachable(0.5)
    assert time.monotonic() - silent.wait_for_request(0) < 0.5 + PAST_DEADLINE_S


def test_a_silent_controller_never_acknowledges_and_flush_gives_up_on_time(driver, silent_uri):
    """A writer is made without contacting anything; its events then wait forever."""
    producer = driver(silent_uri).create_producer("topic")
    acks = []
    producer.send(b"key", b"payload", lambda error, *_: acks.append(error), 1, 0)
    started = time.monotonic()
    assert producer.flush(0.5) == 1
    assert 0.5 <= time.monotonic() - started < 1.0
    assert acks == []


def test_a_panic_in_the_control_process_is_a_driver_error_and_the_child_lives_on(child):
    uri = f"tcp://127.0.0.1:{free_port()}"
    control_process = child(uri)
    with pytest.raises(DriverError) as caught:
        control_process.call("creating reader group g", panic, timeout_s=10)
    message = str(caught.value)
    assert uri in message and "creating reader group g" in message
    assert "SimulatedPanic: Failed to fetch Stream's Head segments" in message
    assert isinstance(control_process.call("asking its pid", child_pid, timeout_s=10), int)


def test_a_real_client_panic_becomes_a_driver_error_here_and_in_the_child(
    child, tmp_path, monkeypatch
):
    """``tls://`` without CA certificates makes the client panic before any connection."""
    monkeypatch.delenv("pravega_client_tls_cert_path", raising=False)
    monkeypatch.chdir(tmp_path)  # no ./certs, the client's default
    uri = f"tls://127.0.0.1:{free_port()}"
    with pytest.raises(DriverError, match="PanicException: should be valid path") as here:
        client_call(uri, "opening a client", open_manager, uri)
    assert uri in str(here.value)
    with pytest.raises(DriverError, match="PanicException: should be valid path"):
        child(uri).call("listing scopes", control.list_scopes, timeout_s=10)


def test_a_panic_in_process_is_converted_but_ctrl_c_passes_through():
    uri = "tcp://127.0.0.1:1"

    def raises(error):
        raise error

    with pytest.raises(DriverError) as caught:
        client_call(uri, "creating a reader", raises, SimulatedPanic("boom"))
    assert str(caught.value) == (
        "pravega: creating a reader at tcp://127.0.0.1:1 failed: SimulatedPanic: boom"
    )
    with pytest.raises(KeyboardInterrupt):
        client_call(uri, "creating a reader", raises, KeyboardInterrupt())


def test_ctrl_c_while_waiting_is_not_swallowed_and_kills_the_child(child):
    # Python's own SIGINT handler, as an interactive process has it: interrupt_main() does
    # nothing while SIGINT is ignored, as it is in a suite started in the background by a
    # non-interactive shell (bash's `&`: Python then keeps the inherited SIG_IGN)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        ctrl_c_while_waiting(child)
    finally:
        signal.signal(signal.SIGINT, previous)


def ctrl_c_while_waiting(child):
    control_process = child(f"tcp://127.0.0.1:{free_port()}")
    pid = control_process.call("asking its pid", child_pid, timeout_s=10)
    ctrl_c = threading.Timer(0.5, _thread.interrupt_main)  # what Ctrl-C does to the main thread
    ctrl_c.start()
    try:
        error, seconds = timed(control_process.call, "creating scope s", hang, timeout_s=30)
    finally:
        ctrl_c.cancel()
    assert isinstance(error, KeyboardInterrupt)
    assert seconds < 0.5 + PAST_DEADLINE_S
    assert not process_alive(pid)


def test_past_the_deadline_the_child_is_killed_and_the_next_call_gets_a_fresh_one(child):
    control_process = child(f"tcp://127.0.0.1:{free_port()}")
    pid = control_process.call("asking its pid", child_pid, timeout_s=10)
    error, seconds = timed(control_process.call, "creating scope s", hang, timeout_s=0.5)
    assert isinstance(error, BrokerUnreachable)
    assert "creating scope s: no answer within 0.5 s" in str(error)
    assert seconds < 0.5 + PAST_DEADLINE_S
    assert not process_alive(pid)
    assert control_process.call("asking its pid", child_pid, timeout_s=10) not in (pid, None)


def test_a_control_process_that_dies_is_a_driver_error_naming_its_exit_code(child):
    uri = f"tcp://127.0.0.1:{free_port()}"
    with pytest.raises(DriverError, match=r"sealing stream s/t at tcp://.*exited \(3\)"):
        child(uri).call("sealing stream s/t", die, timeout_s=10)
