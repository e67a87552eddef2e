"""The RabbitMQ Streams driver file and URLs, read without a broker: defaults, typos, bad
values, URL mapping, and how connection failures map to loadgen's error kinds."""

import ssl

import pytest

from loadgen.base.errors import BrokerLoginRefused, BrokerTlsFailed, BrokerUnreachable, ConfigError
from loadgen.driver_api import driver_classes
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen_drivers.rabbitmq_streams import Driver
from loadgen_drivers.rabbitmq_streams.config import endpoint, mask_password, stream_arguments

URI = "rabbitmq-stream://guest:guest@127.0.0.1:5552/%2F"


def validated(**fields):
    spec = DriverSpec("Streams", "rabbitmq-streams", {"uris": [URI], **fields}, "streams.yaml")
    return Driver.validate_config(spec)


def test_the_kind_is_registered_with_its_url_schemes_and_local_broker():
    driver = driver_classes()["rabbitmq-streams"]
    assert driver.display_name == "RabbitMQ Streams"
    assert driver.url_schemes == ("rabbitmq-stream", "rabbitmq-stream+tls")
    assert driver.local_broker.port == 5552
    assert driver.client_distributions == ("rstream",)


def test_defaults_are_plain_streams_with_confirms_and_retention():
    config = validated()
    assert config.super_stream is False
    assert (config.sub_entry_size, config.compression) == (1, "none")
    assert config.max_unconfirmed == 10_000
    assert stream_arguments(config) == {
        "max-length-bytes": 2_000_000_000,
        "stream-max-segment-size-bytes": 100_000_000,
    }


def test_fields_are_read_by_their_camel_case_names():
    config = validated(
        superStream=True, subEntrySize=100, compression="GZIP", maxUnconfirmedMessages=500,
        maxLengthBytes=0, consumerCredit=3, offsetStoreIntervalMs=200,
    )  # fmt: skip
    assert (config.super_stream, config.sub_entry_size, config.compression) == (True, 100, "gzip")
    assert (config.max_unconfirmed, config.consumer_credit) == (500, 3)
    assert stream_arguments(config) == {"stream-max-segment-size-bytes": 100_000_000}


def test_a_misspelt_field_names_the_file_and_the_field():
    with pytest.raises(ConfigError) as raised:
        validated(subEntrySise=10)
    assert raised.value.file == "streams.yaml" and "subEntrySise" in str(raised.value)


@pytest.mark.parametrize(
    ("field", "value"),
    [("compression", "lz4"), ("subEntrySize", 0), ("maxUnconfirmedMessages", 0)],
)
def test_bad_values_are_config_errors(field, value):
    with pytest.raises(ConfigError) as raised:
        validated(**{field: value})
    assert field in str(raised.value)


def test_a_bad_uri_is_named_with_its_password_masked():
    spec = DriverSpec("S", "rabbitmq-streams", {"uris": ["amqp://u:secret@h:5672/"]}, "f.yaml")
    with pytest.raises(ConfigError) as raised:
        Driver.validate_config(spec)
    assert "uris[0]" in str(raised.value) and "secret" not in str(raised.value)


def test_a_url_becomes_the_one_uri():
    config = Driver.config_from_url("rabbitmq-stream://u:p@host:6000/vh", {"subEntrySize": 5})
    assert config == {"subEntrySize": 5, "uris": ["rabbitmq-stream://u:p@host:6000/vh"]}


def test_uris_parse_with_default_ports_and_vhosts():
    plain = endpoint("rabbitmq-stream://alice:s%40cret@node1/%2Fprod")
    assert (plain.host, plain.port, plain.vhost) == ("node1", 5552, "/prod")
    assert (plain.username, plain.password, plain.tls) == ("alice", "s@cret", False)
    secured = endpoint("rabbitmq-stream+tls://node2")
    assert (secured.port, secured.vhost, secured.username, secured.tls) == (
        5551,
        "/",
        "guest",
        True,
    )
    assert mask_password("rabbitmq-stream://a:b@h:1/") == "rabbitmq-stream://a:***@h:1/"


def test_connection_failures_map_to_exit_kinds():
    from rstream import exceptions

    from loadgen_drivers.rabbitmq_streams.connection import failure

    where = endpoint(URI)
    assert isinstance(failure(where, exceptions.AuthenticationFailure()), BrokerLoginRefused)
    assert isinstance(failure(where, ssl.SSLError("bad certificate")), BrokerTlsFailed)
    assert isinstance(failure(where, ConnectionRefusedError()), BrokerUnreachable)
