"""The Pravega driver file: OMB's fields with OMB's meanings, what each becomes in the Python
client, and a precise error or a warning for everything else. Nothing here connects."""

import logging

import pravega_client
import pytest

from loadgen.base.errors import ConfigError
from loadgen.driver_api.driver_file import spec_from_dict
from loadgen.spec.loader import load_yaml
from loadgen_drivers.pravega import Driver
from loadgen_drivers.pravega.client import scaling_policy
from loadgen_drivers.pravega.config import Scaling, caveats

OMB_PRAVEGA_YAML = """\
name: Pravega
driverClass: io.openmessaging.benchmark.driver.pravega.PravegaBenchmarkDriver
client:
  controllerURI: tcp://localhost:9090
  scopeName: examples
writer:
  enableConnectionPooling: True
includeTimestampInEvent: True
enableStreamAutoScaling: False
eventsPerSecond: 10000
"""
"""OMB's shipped driver-pravega/pravega.yaml, licence header left out."""

OMB_EXACTLY_ONCE_YAML = """\
name: Pravega
driverClass: io.openmessaging.benchmark.driver.pravega.PravegaBenchmarkDriver
client:
  controllerURI: tcp://localhost:9090
  scopeName: examples
writer:
  enableConnectionPooling: True
includeTimestampInEvent: True
enableTransaction: True
eventPerTransaction: 1
"""
"""OMB's shipped pravega-exactly-once.yaml, with its misspelt transaction size."""

MINIMAL = "name: P\ndriver: pravega\nclient:\n  controllerURI: tcp://h:9090\n"


def spec_of(tmp_path, text):
    path = tmp_path / "pravega.yaml"
    path.write_text(text)
    return spec_from_dict(load_yaml(path), source=str(path))


def validate(tmp_path, text):
    return Driver.validate_config(spec_of(tmp_path, text))


def test_omb_driver_class_selects_this_driver_and_its_file_keeps_omb_meanings(tmp_path):
    spec = spec_of(tmp_path, OMB_PRAVEGA_YAML)
    assert spec.kind == "pravega"
    config = Driver.validate_config(spec)
    assert config.client.controller_uri == "tcp://localhost:9090"
    assert config.client.scope_name == "examples"
    assert config.writer.enable_connection_pooling is True
    assert config.include_timestamp_in_event is True
    assert config.events_per_second == 10_000
    assert config.scaling(16) == Scaling("fixed", 0, 16)  # autoscaling off: fixed segments


def test_defaults_are_ombs(tmp_path):
    config = validate(tmp_path, MINIMAL)
    assert config.writer.enable_connection_pooling is False
    assert config.include_timestamp_in_event is True
    assert (config.enable_transaction, config.transaction_size) == (False, 1)
    assert config.enable_stream_auto_scaling is False
    assert (config.events_per_second, config.kbytes_per_second) == (-1, -1)
    assert (config.create_scope, config.delete_streams) == (True, True)
    assert config.client.timeout_s == 30
    assert caveats(config) == []


def test_omb_exactly_once_file_is_read_with_its_misspelling_and_says_so(tmp_path):
    config = validate(tmp_path, OMB_EXACTLY_ONCE_YAML)
    assert config.enable_transaction is True
    assert config.transaction_size == 1
    assert any("eventPerTransaction" in reason for reason in caveats(config))


def test_the_misspelling_sets_the_transaction_size_unless_it_contradicts_the_real_field(tmp_path):
    text = MINIMAL + "enableTransaction: true\n"
    assert validate(tmp_path, text + "eventPerTransaction: 50\n").transaction_size == 50
    assert validate(tmp_path, text + "eventsPerTransaction: 50\n").transaction_size == 50
    with pytest.raises(ConfigError) as caught:
        validate(tmp_path, text + "eventsPerTransaction: 50\neventPerTransaction: 7\n")
    assert caught.value.path == "eventPerTransaction"
    assert caught.value.allowed == ["50"]


def test_an_unknown_key_names_itself_the_nearest_field_and_every_allowed_one(tmp_path):
    with pytest.raises(ConfigError) as caught:
        validate(tmp_path, MINIMAL + "enableTransactions: true\n")
    error = caught.value
    assert error.path == "enableTransactions"
    assert "did you mean 'enableTransaction'" in str(error)
    assert {"eventsPerTransaction", "kbytesPerSecond", "createScope", "deleteStreams"} <= set(
        error.allowed
    )
    assert str(tmp_path / "pravega.yaml") in str(error)


def test_an_unknown_client_key_is_reported_under_client(tmp_path):
    with pytest.raises(ConfigError) as caught:
        validate(tmp_path, MINIMAL + "  controllerUri: tcp://h:9090\n")
    assert caught.value.path == "client.controllerUri"
    assert "did you mean 'controllerURI'" in str(caught.value)
    assert caught.value.allowed == ["controllerURI", "scopeName", "timeoutSeconds"]


@pytest.mark.parametrize(
    ("line", "path"),
    [
        ("eventsPerTransaction: 0", "eventsPerTransaction"),
        ("eventsPerSecond: 0", "eventsPerSecond"),
        ("kbytesPerSecond: -5", "kbytesPerSecond"),
        ("eventsPerSecond: 3000000000", "eventsPerSecond"),
        ("enableTransaction: maybe", "enableTransaction"),
    ],
)
def test_bad_values_name_their_field(tmp_path, line, path):
    with pytest.raises(ConfigError) as caught:
        validate(tmp_path, MINIMAL + line + "\n")
    assert caught.value.path == path


@pytest.mark.parametrize(
    "uri", ["http://h:9090", "tcp://h", "h:9090", "tcp://:9090", "tcp://h:port"]
)
def test_a_controller_uri_needs_tcp_or_tls_and_a_host_and_port(tmp_path, uri):
    with pytest.raises(ConfigError) as caught:
        validate(tmp_path, f"name: P\ndriver: pravega\nclient:\n  controllerURI: '{uri}'\n")
    assert caught.value.path == "client.controllerURI"
    assert uri in str(caught.value)


def test_a_missing_controller_uri_and_a_zero_timeout_are_errors(tmp_path):
    with pytest.raises(ConfigError) as caught:
        validate(tmp_path, "name: P\ndriver: pravega\nclient:\n  scopeName: s\n")
    assert caught.value.path == "client.controllerURI"
    with pytest.raises(ConfigError) as caught:
        validate(tmp_path, MINIMAL + "  timeoutSeconds: 0\n")
    assert caught.value.path == "client.timeoutSeconds"


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ("", Scaling("fixed", 0, 4)),
        ("enableStreamAutoScaling: true\neventsPerSecond: 500\n", Scaling("events", 500, 4)),
        ("enableStreamAutoScaling: true\nkbytesPerSecond: 64\n", Scaling("kbytes", 64, 4)),
        (
            "enableStreamAutoScaling: true\neventsPerSecond: 500\nkbytesPerSecond: 64\n",
            Scaling("events", 500, 4),
        ),
        ("enableStreamAutoScaling: true\n", Scaling("fixed", 0, 4)),
        ("eventsPerSecond: 500\n", Scaling("fixed", 0, 4)),
    ],
    ids=["fixed", "by-event-rate", "by-data-rate", "event-rate-first", "no-target", "no-autoscale"],
)
def test_partitions_become_segments_as_omb_chooses_the_policy(tmp_path, fields, expected):
    scaling = validate(tmp_path, MINIMAL + fields).scaling(4)
    assert scaling == expected
    assert isinstance(scaling_policy(scaling), pravega_client.StreamScalingPolicy)


@pytest.mark.parametrize(
    ("fields", "mentions"),
    [
        ("writer:\n  enableConnectionPooling: true\n", "enableConnectionPooling"),
        ("eventsPerSecond: 500\n", "eventsPerSecond is not applied"),
        ("eventsPerSecond: 5\nkbytesPerSecond: 5\n", "eventsPerSecond and kbytesPerSecond are"),
        (
            "enableStreamAutoScaling: true\neventsPerSecond: 5\nkbytesPerSecond: 5\n",
            "kbytesPerSecond is not applied",
        ),
        ("enableStreamAutoScaling: true\n", "without eventsPerSecond or kbytesPerSecond"),
        ("eventsPerTransaction: 10\n", "enableTransaction is false"),
        ("includeTimestampInEvent: false\n", "no end-to-end latency"),
    ],
)
def test_a_field_that_cannot_take_effect_is_a_caveat(tmp_path, fields, mentions):
    reasons = caveats(validate(tmp_path, MINIMAL + fields))
    assert len(reasons) == 1
    assert mentions in reasons[0]


def test_creating_the_driver_warns_once_per_caveat_without_connecting(tmp_path, caplog):
    caplog.set_level(logging.WARNING, "loadgen.pravega")
    driver = Driver.from_config(spec_of(tmp_path, OMB_PRAVEGA_YAML))
    driver.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert "enableConnectionPooling" in warnings[0] and "pravega.yaml" in warnings[0]
    assert "eventsPerSecond" in warnings[1]
