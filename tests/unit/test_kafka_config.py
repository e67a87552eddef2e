"""Reading OMB's Kafka driver YAML for librdkafka, without touching the network."""

import logging
from pathlib import Path

import pytest

from loadgen.base.errors import ConfigError
from loadgen.driver_api.driver_file import load_driver_spec
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen_drivers.kafka import Driver
from loadgen_drivers.kafka.config import parse_properties, to_librdkafka
from loadgen_drivers.kafka.transactions import AbortPlan, transactional_ids

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "drivers"


def test_properties_text_parses_like_java():
    text = "# comment\n! also a comment\n\nacks=all\nlinger.ms : 5\nclient.id=a=b\n"
    assert parse_properties(text) == {"acks": "all", "linger.ms": "5", "client.id": "a=b"}


def test_properties_line_without_separator_is_rejected():
    with pytest.raises(ValueError):
        parse_properties("acks")


KEY_BODY = ("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7", "VJTUt9Us8cKjMzEfYyjiWA4R4")
"""Lines of a private key's body, as a Java user continues them in a .properties value."""
MULTI_LINE_KEY = (
    "bootstrap.servers=127.0.0.1:9092\n"
    "ssl.keystore.key=-----BEGIN PRIVATE KEY----- \\\n"
    f"    {KEY_BODY[0]} \\\n"
    f"    {KEY_BODY[1]} \\\n"
    "    -----END PRIVATE KEY-----\n"
)


def test_continued_lines_join_as_java_joins_them_and_an_escaped_backslash_continues_none():
    parsed = parse_properties(MULTI_LINE_KEY + "client.id=a\\\\\nacks=all\n")
    assert parsed["ssl.keystore.key"] == (
        f"-----BEGIN PRIVATE KEY----- {KEY_BODY[0]} {KEY_BODY[1]} -----END PRIVATE KEY-----"
    )
    assert parsed["acks"] == "all"  # after an even count of backslashes: a line of its own


def test_a_multi_line_private_key_reaches_no_error_message_line_by_line():
    """The error names the bad line's number; its ``(got ...)`` echo hides the whole key."""
    with pytest.raises(ConfigError) as caught:
        Driver.validate_config(kafka_spec(commonConfig=MULTI_LINE_KEY + "linger.ms\n"))
    message = str(caught.value)
    assert "line 6 is not a 'key=value' line" in message
    assert "ssl.keystore.key=<redacted>" in message
    assert not any(line in message for line in KEY_BODY), message


def test_java_only_keys_are_mapped_dropped_or_capped(caplog):
    with caplog.at_level(logging.WARNING):
        translated = to_librdkafka(
            "producerConfig",
            {
                "key.serializer": "org.apache.kafka.common.serialization.StringSerializer",
                "buffer.memory": "33554432",
                "max.request.size": "4194304",
                "default.api.timeout.ms": "1200000",
                "request.timeout.ms": "1200000",
                "linger.ms": "1",
            },
            "k.yaml",
        )
    assert translated == {
        "queue.buffering.max.kbytes": "32768",
        "message.max.bytes": "4194304",
        "request.timeout.ms": "900000",
        "linger.ms": "1",
    }
    assert "default.api.timeout.ms" in caplog.text and "k.yaml" in caplog.text


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("kafka*.yaml")), ids=lambda p: p.name)
def test_shipped_kafka_configs_validate(path):
    config = Driver.validate_config(load_driver_spec(path))
    assert config.bootstrap_servers


def test_yaml_mapping_is_accepted_as_well_as_properties_text():
    spec = DriverSpec(
        name="K",
        kind="kafka",
        config={
            "commonConfig": {"bootstrap.servers": "127.0.0.1:9092"},
            "producerConfig": {"acks": "all", "enable.idempotence": True},
            "consumerConfig": {"auto.offset.reset": "earliest"},
        },
    )
    assert Driver.validate_config(spec).producer_config["enable.idempotence"] == "true"


def kafka_spec(producer_config="acks=all", **extra):
    config = {
        "commonConfig": "bootstrap.servers=127.0.0.1:9092",
        "producerConfig": producer_config,
        "consumerConfig": "auto.offset.reset=earliest",
        **extra,
    }
    return DriverSpec(name="K", kind="kafka", source="k.yaml", config=config)


def test_misspelt_top_level_key_suggests_the_right_one():
    with pytest.raises(ConfigError, match="did you mean 'replicationFactor'"):
        Driver.validate_config(kafka_spec(replicationFactr=3))


@pytest.mark.parametrize(
    ("producer_config", "path"),
    [
        ("acks=sometimes", "producerConfig.acks"),
        ("acks=all\nlinger.msec=5", "producerConfig.linger.msec"),
    ],
)
def test_a_key_or_value_librdkafka_rejects_names_file_and_path(producer_config, path):
    with pytest.raises(ConfigError) as caught:
        Driver.validate_config(kafka_spec(producer_config))
    assert caught.value.path == path
    assert "k.yaml" in str(caught.value)


def test_consumer_assignment_accepts_subscribe_or_assign_and_names_them_otherwise():
    config = {"commonConfig": "", "producerConfig": "", "consumerConfig": ""}
    spec = DriverSpec(name="K", kind="kafka", config={**config, "consumerAssignment": "assign"})
    assert Driver.validate_config(spec).consumer_assignment == "assign"
    bad = DriverSpec(
        name="K", kind="kafka", config={**config, "consumerAssignment": "manual"}, source="k.yaml"
    )
    with pytest.raises(ConfigError) as caught:
        Driver.validate_config(bad)
    assert "consumerAssignment" in str(caught.value)
    assert "subscribe" in str(caught.value) and "assign" in str(caught.value)


@pytest.mark.parametrize(
    "field, value",
    [
        ("transactionDurationMs", 100),
        ("messagesPerTransaction", 10),
        ("transactionAbortRatio", 0.5),
    ],
)
def test_a_transaction_field_without_a_transactional_id_names_itself_and_what_is_missing(
    field, value
):
    spec = DriverSpec(
        name="K",
        kind="kafka",
        config={"commonConfig": "", "producerConfig": "", "consumerConfig": "", field: value},
        source="kafka.yaml",
    )
    with pytest.raises(ConfigError) as error:
        Driver.validate_config(spec)
    assert (error.value.file, error.value.path, error.value.value) == ("kafka.yaml", field, value)
    assert "transactional.id" in str(error.value)


def test_transaction_fields_are_read_with_a_transactional_id_and_bounded():
    config = {"commonConfig": "", "producerConfig": "transactional.id=t", "consumerConfig": ""}
    spec = DriverSpec(name="K", kind="kafka", config={**config, "transactionAbortRatio": 0.25})
    assert Driver.validate_config(spec).transaction_abort_ratio == 0.25
    with pytest.raises(ConfigError) as error:
        Driver.validate_config(
            DriverSpec(name="K", kind="kafka", config={**config, "transactionAbortRatio": 2})
        )
    assert error.value.path == "transactionAbortRatio"


def test_aborts_are_spread_evenly_and_ids_differ_per_producer():
    plan = AbortPlan(0.25)
    assert [plan.next_aborts() for _ in range(8)] == [False, False, False, True] * 2
    assert not any(AbortPlan(0.0).next_aborts() for _ in range(100))
    ids = transactional_ids("lg", "topic-a")
    first, second = ids(), ids()
    assert first != second and first.startswith("lg-topic-a-") and first.endswith("-0")
