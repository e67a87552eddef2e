"""loadgen's pytest plugin (entry point ``pytest11``): local brokers and runs as fixtures.

Fixtures, all session-scoped brokers on free 127.0.0.1 ports, started on first use:

* ``kafka_broker`` (tansu), ``rabbitmq_broker`` (Debian rabbitmq-server), ``pulsar_broker``
  (pulsar-lite, 16 partitions per auto-created topic), ``pravega_broker`` (loadgen's local
  Pravega, :mod:`loadgen_drivers.pravega.local`), ``nats_broker`` (nats-server with JetStream),
  ``redis_broker`` (Debian redis-server), ``rabbitmq_streams_broker`` (Debian rabbitmq-server
  with its stream plugin): each the broker its driver declares
  (:attr:`loadgen.driver_api.BaseDriver.local_broker`);
  a broker that cannot start skips the test with the reason (fails it when
  ``LOADGEN_REQUIRE_BROKERS=1``), as does one left out by ``--loadgen-broker``.
* ``loadgen_broker``: each selected broker in turn (the test runs once per broker kind), a
  third-party driver's too.
* ``loadgen_run``: :func:`loadgen.run` with short-run defaults (1 s stats interval, no warm-up).
* ``loadgen_benchmark``: the same run as one pytest-benchmark round, with the result's rates
  and percentiles in ``extra_info`` (needs pytest-benchmark).

``--loadgen-broker KIND`` (repeatable) picks the brokers a session may start;
``--loadgen-upstream`` makes each ``<kind>_broker`` the project's own server where the driver
declares one (Apache Kafka instead of tansu, Apache Pulsar's standalone instead of pulsar-lite,
Pravega's standalone instead of loadgen's local Pravega), so one suite runs on either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from loadgen.api import run
from loadgen.base.errors import LoadgenError, MissingExtra
from loadgen.driver_api.local.process import LocalBroker
from loadgen.local_brokers import launcher
from loadgen.pytest_plugin.benchmark import run_benchmarked
from loadgen.pytest_plugin.require import unavailable
from loadgen.running.result import Result


def broker_kinds() -> tuple[str, ...]:
    """The local brokers the installed drivers declare (Spark is no driver's)."""
    return tuple(kind for kind in launcher.starters() if kind != launcher.SPARK_KIND)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("loadgen")
    group.addoption(
        "--loadgen-broker",
        action="append",
        choices=broker_kinds(),
        default=None,
        help="local broker kinds this session may start (repeatable; default: all)",
    )
    group.addoption(
        "--loadgen-upstream",
        action="store_true",
        help="start each kind's own server where its driver declares one (Apache Kafka, "
        "Apache Pulsar, Pravega) instead of the stand-in",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "loadgen: a test that runs load through loadgen")


def _selected(config: pytest.Config) -> tuple[str, ...]:
    return tuple(config.getoption("--loadgen-broker") or broker_kinds())


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "loadgen_broker" in metafunc.fixturenames:
        metafunc.parametrize("loadgen_broker", _selected(metafunc.config), indirect=True)


def start_local_broker(config: pytest.Config, kind: str, **options: Any) -> LocalBroker:
    """A broker of ``kind`` started with ``options`` (e.g. ``host=``), its project's own server
    under ``--loadgen-upstream`` where there is one; the test is skipped with the reason
    (failed under ``LOADGEN_REQUIRE_BROKERS=1``) when it cannot start. The caller stops it."""
    if kind not in _selected(config):
        pytest.skip(f"{kind} is not among --loadgen-broker {' '.join(_selected(config))}")
    upstream = config.getoption("--loadgen-upstream") and kind in launcher.starters(upstream=True)
    try:
        return launcher.start(kind, upstream=upstream, **options)
    except MissingExtra as missing:
        unavailable(str(missing))
    except LoadgenError as error:
        unavailable(f"the local {kind} broker did not start: {error}")


def fixture_name(kind: str) -> str:
    """``<kind>_broker``, a hyphen in the kind an underscore (``rabbitmq_streams_broker``)."""
    return f"{kind.replace('-', '_')}_broker"


def _broker_fixture(kind: str):
    @pytest.fixture(scope="session", name=fixture_name(kind))
    def broker(request: pytest.FixtureRequest) -> Iterator[LocalBroker]:
        started = start_local_broker(request.config, kind)
        yield started
        started.stop()

    return broker


kafka_broker = _broker_fixture("kafka")
rabbitmq_broker = _broker_fixture("rabbitmq")
pulsar_broker = _broker_fixture("pulsar")
pravega_broker = _broker_fixture("pravega")
nats_broker = _broker_fixture("nats")
redis_broker = _broker_fixture("redis")
rabbitmq_streams_broker = _broker_fixture("rabbitmq-streams")


class _DeclaredBrokers:
    """Brokers of kinds with no ``<kind>_broker`` fixture (a third-party driver's): one per kind
    for the session, started on first use."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._started: dict[str, LocalBroker] = {}

    def get(self, kind: str) -> LocalBroker:
        if kind not in self._started:
            self._started[kind] = start_local_broker(self._config, kind)
        return self._started[kind]

    def stop(self) -> None:
        for broker in self._started.values():
            broker.stop()


@pytest.fixture(scope="session")
def _loadgen_declared_brokers(request: pytest.FixtureRequest) -> Iterator[_DeclaredBrokers]:
    brokers = _DeclaredBrokers(request.config)
    yield brokers
    brokers.stop()


@pytest.fixture
def loadgen_broker(request: pytest.FixtureRequest) -> LocalBroker:
    """The broker of the kind this test instance is parametrized with: the ``<kind>_broker``
    fixture where one exists (a conftest may override it), else the kind's declared broker."""
    try:
        return request.getfixturevalue(fixture_name(request.param))
    except pytest.FixtureLookupError:
        return request.getfixturevalue("_loadgen_declared_brokers").get(request.param)


@pytest.fixture
def loadgen_run() -> Callable[..., Result]:
    """``loadgen_run(workload, broker, duration="5s")``: a run with short-run defaults."""
    return _run_short


def _run_short(workload: Any, driver: Any, **options: Any) -> Result:
    return run(workload, driver, **_short_run_defaults(options))


def _short_run_defaults(options: dict[str, Any]) -> dict[str, Any]:
    return {"warmup": 0, "stats_interval": 1.0, **options}


@pytest.fixture
def loadgen_benchmark(request: pytest.FixtureRequest) -> Callable[..., Result]:
    """``loadgen_benchmark(workload, broker, duration="5s")``: a run timed by pytest-benchmark."""
    benchmark = request.getfixturevalue("benchmark")

    def run_timed(workload: Any, driver: Any, **options: Any) -> Result:
        return run_benchmarked(benchmark, workload, driver, **_short_run_defaults(options))

    return run_timed
