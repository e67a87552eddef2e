"""A refused connection is reported at once; anything else is left to the broker's client.

Real sockets on 127.0.0.1, no broker: a closed port (bound, then closed: the kernel refuses
it), a listening one (accepted), and an unanswered one (SYNs dropped, as by a host that is down
or a firewall that drops): a listening socket that never accepts, its accept queue full.
"""

import contextlib
import socket
import time

import pytest

from loadgen import api
from loadgen.base.errors import BrokerUnreachable
from loadgen.base.refusal import ACCEPTED, REFUSAL_WAIT_S, REFUSED, outcomes, split_address
from loadgen.driver_api import fail_if_refused, listed_addresses, open_driver, url_addresses
from loadgen.driver_api.local.process import free_port

WITHIN_S = 2.0
"""The promise: a refused connection is reported within this."""
ANSWERED_S = 0.2
"""Generous for connects on loopback, which are answered in microseconds."""


@pytest.fixture
def closed():
    """A port on 127.0.0.1 where nothing listens."""
    return ("127.0.0.1", free_port())


@pytest.fixture
def listening():
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield ("127.0.0.1", server.getsockname()[1])


@pytest.fixture
def unanswered():
    """A port whose connects get no answer: its listener never accepts and its accept queue
    (one connection with a backlog of 0) is full, so the kernel drops further SYNs."""
    with contextlib.ExitStack() as stack:
        listener = stack.enter_context(socket.socket())
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        for _ in range(2):
            filler = stack.enter_context(socket.socket())
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
        deadline = time.monotonic() + 5
        while outcomes([("127.0.0.1", port)], 0.1) != ["no answer within 0.1 s"]:
            assert time.monotonic() < deadline, "the accept queue did not fill"
        yield ("127.0.0.1", port)


def timed(call, *args, **kwargs):
    started = time.monotonic()
    try:
        call(*args, **kwargs)
    except BrokerUnreachable as error:
        return error, time.monotonic() - started
    return None, time.monotonic() - started


def test_a_closed_port_is_reported_at_once_naming_the_address(closed):
    shown = f"{closed[0]}:{closed[1]}"
    error, seconds = timed(fail_if_refused, "kafka", shown, [closed])
    assert str(error) == f"kafka broker unreachable at {shown}: connection refused"
    assert error.exit_code == 3 and error.address == shown
    assert seconds < ANSWERED_S


def test_the_addresses_tried_are_named_when_the_configured_text_does_not_show_them(closed):
    error, _ = timed(fail_if_refused, "pulsar", "pulsar://localhost", [("localhost", closed[1])])
    assert str(error) == (
        f"pulsar broker unreachable at pulsar://localhost: connection refused by "
        f"localhost:{closed[1]}"
    )


def test_a_listening_port_is_no_failure(listening):
    error, seconds = timed(fail_if_refused, "kafka", "x", [listening])
    assert error is None and seconds < ANSWERED_S


def test_one_accepting_address_among_refusing_ones_is_no_early_failure(closed, listening):
    other_closed = ("127.0.0.1", free_port())
    assert outcomes([closed, listening, other_closed], 1.0) == [REFUSED, ACCEPTED, REFUSED]
    error, seconds = timed(fail_if_refused, "kafka", "x", [closed, listening, other_closed])
    assert error is None and seconds < ANSWERED_S


def test_every_address_refusing_is_a_failure(closed):
    others = [("127.0.0.1", free_port()), ("localhost", closed[1])]
    error, seconds = timed(fail_if_refused, "kafka", "x", [closed, *others])
    assert error is not None and "connection refused by " in str(error)
    assert seconds < ANSWERED_S


def test_an_unresolvable_host_name_is_left_to_the_client(closed):
    unknown = ("no-such-host.invalid", 9092)
    [outcome] = outcomes([unknown], 1.0)
    assert outcome.startswith("name not resolved: ")
    error, _ = timed(fail_if_refused, "kafka", "x", [closed, unknown])
    assert error is None  # the client may still resolve it, or say why it cannot


def test_an_unanswered_port_is_left_to_the_client_after_the_short_wait(closed, unanswered):
    assert outcomes([unanswered], 0.3) == ["no answer within 0.3 s"]
    error, seconds = timed(fail_if_refused, "kafka", "x", [closed, unanswered])
    assert error is None
    assert REFUSAL_WAIT_S <= seconds < REFUSAL_WAIT_S + ANSWERED_S


def test_the_wait_keeps_to_a_smaller_budget(unanswered):
    error, seconds = timed(fail_if_refused, "kafka", "x", [unanswered], 0.1)
    assert error is None and seconds < 0.1 + ANSWERED_S


def test_no_address_is_nothing_to_check():
    assert timed(fail_if_refused, "kafka", "<no bootstrap.servers>", [])[0] is None


@pytest.mark.parametrize(
    ("entry", "address"),
    [
        ("broker", ("broker", 9092)),
        (" broker:19092 ", ("broker", 19092)),
        ("SASL_SSL://broker:9093", ("broker", 9093)),
        ("[::1]:9094", ("::1", 9094)),
        ("[::1]", ("::1", 9092)),
        ("::1", ("::1", 9092)),
        ("user:pass@broker:1/path", ("broker", 1)),
    ],
)
def test_an_address_is_read_as_clients_read_it(entry, address):
    assert split_address(entry, 9092) == address


def test_lists_and_urls_give_every_address_or_none_when_one_does_not_parse():
    assert listed_addresses(["a:1", "b", " ", "c:3"], 9092) == [("a", 1), ("b", 9092), ("c", 3)]
    assert listed_addresses(["a:1", "b:port"], 9092) == []
    assert listed_addresses(["a:99999"], 9092) == []
    assert url_addresses("pulsar://h1:6650,h2/", 6650) == [("h1", 6650), ("h2", 6650)]
    assert url_addresses("amqps://guest:p@ss,word@rabbit/%2F?x=1", 5671) == [("rabbit", 5671)]
    assert url_addresses("amqp://", 5672) == []
    assert url_addresses("pulsar://[::1", 6650) == []


# -- each driver's check_reachable, with its real client ------------------------------------

DRIVERS = {
    "kafka": lambda address: {
        "commonConfig": f"bootstrap.servers={address}",
        "producerConfig": "acks=all",
        "consumerConfig": "auto.offset.reset=earliest",
    },
    "pulsar": lambda address: {"client": {"serviceUrl": f"pulsar://{address}"}},
    "rabbitmq": lambda address: {"amqpUris": [f"amqp://guest:guest@{address}/%2F"]},
    "pravega": lambda address: {"client": {"controllerURI": f"tcp://{address}"}},
}


@pytest.fixture
def driver_at():
    opened = []

    def make(kind, address):
        host, port = address
        opened.append(open_driver(api.driver(kind, **DRIVERS[kind](f"{host}:{port}"))))
        return opened[-1]

    yield make
    for each in opened:
        each.close()


@pytest.mark.parametrize("kind", DRIVERS)
def test_every_driver_reports_a_closed_port_at_once(driver_at, closed, kind):
    error, seconds = timed(driver_at(kind, closed).check_reachable, 10.0)
    assert isinstance(error, BrokerUnreachable), error
    assert f"{closed[0]}:{closed[1]}" in str(error) and "connection refused" in str(error)
    assert seconds < WITHIN_S


@pytest.mark.parametrize("kind", DRIVERS)
def test_every_driver_gives_an_unanswered_port_its_whole_deadline(driver_at, unanswered, kind):
    """Not a refusal: the client's own check decides, within the deadline (Pravega's guard,
    1 s, is shorter)."""
    error, seconds = timed(driver_at(kind, unanswered).check_reachable, 1.5)
    assert isinstance(error, BrokerUnreachable), error
    assert "connection refused" not in str(error)
    assert (1.0 if kind == "pravega" else 1.5) <= seconds < 1.5 + 1.0


def test_the_pytest_plugin_run_fixture_reports_a_closed_port_at_once(loadgen_run, closed):
    workload = api.workload(
        topics=1,
        partitions_per_topic=1,
        message_size=64,
        producers_per_topic=1,
        subscriptions_per_topic=1,
        consumer_per_subscription=1,
        producer_rate=10,
        test_duration_minutes=1,
    )
    broker = api.driver("kafka", **DRIVERS["kafka"](f"{closed[0]}:{closed[1]}"))
    error, seconds = timed(loadgen_run, workload, broker, duration=1)
    assert isinstance(error, BrokerUnreachable) and "connection refused" in str(error)
    assert seconds < WITHIN_S
