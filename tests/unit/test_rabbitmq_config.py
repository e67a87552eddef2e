"""The RabbitMQ driver file and topology rules, checked without a broker."""

import pytest

from loadgen.base.errors import ConfigError
from loadgen.driver_api.driver_file import spec_from_dict
from loadgen.spec.loader import load_yaml
from loadgen_drivers.rabbitmq import Driver
from loadgen_drivers.rabbitmq.config import ExchangeType, QueueType, mask_password
from loadgen_drivers.rabbitmq.topology import (
    check_partitions,
    key_partition,
    queue_arguments,
    queue_names,
    routing_keys,
)

OMB_RABBITMQ_YAML = """\
name: RabbitMQ
driverClass: io.openmessaging.benchmark.driver.rabbitmq.RabbitMqBenchmarkDriver
producerCreationDelay: 100
producerCreationBatchSize: 5
consumerCreationDelay: 100
consumerCreationBatchSize: 5
amqpUris:
  - amqp://localhost
messagePersistence: false
queueType: QUORUM
"""
"""OMB's shipped driver-rabbitmq/rabbitmq.yaml, field for field."""


def validate(tmp_path, text):
    path = tmp_path / "rabbitmq.yaml"
    path.write_text(text)
    return Driver.validate_config(spec_from_dict(load_yaml(path), source=str(path)))


def test_omb_driver_file_is_read_with_omb_meanings(tmp_path):
    config = validate(tmp_path, OMB_RABBITMQ_YAML)
    assert config.amqp_uris == ["amqp://localhost"]
    assert config.queue_type is QueueType.QUORUM
    assert config.producer_creation_delay_ms == 100
    assert config.consumer_creation_batch_size == 5
    assert config.message_persistence is False


def test_loadgen_defaults_partition_by_routing_key_with_confirms_and_manual_acks(tmp_path):
    config = validate(tmp_path, "name: R\ndriver: rabbitmq\namqpUris: [amqp://h]\n")
    assert config.exchange_type is ExchangeType.DIRECT
    assert (config.confirms, config.mandatory, config.auto_ack) == (True, True, False)
    assert (config.max_in_flight, config.prefetch) == (1000, 1000)


def test_enum_fields_accept_any_case_and_report_the_value_as_written(tmp_path):
    config = validate(
        tmp_path,
        "name: R\ndriver: rabbitmq\namqpUris: [amqp://h]\nqueueType: quorum\n"
        "exchangeType: DIRECT\n",
    )
    assert (config.queue_type, config.exchange_type) == (QueueType.QUORUM, ExchangeType.DIRECT)
    with pytest.raises(ConfigError) as caught:
        validate(tmp_path, "name: R\ndriver: rabbitmq\namqpUris: [amqp://h]\nqueueType: quorom\n")
    assert caught.value.path == "queueType"
    assert "'quorom'" in str(caught.value)
    assert "CLASSIC, QUORUM, STREAM" in str(caught.value)


def test_a_misspelt_field_is_named_with_the_nearest_one(tmp_path):
    with pytest.raises(ConfigError, match="did you mean 'prefetch'"):
        validate(tmp_path, "name: R\ndriver: rabbitmq\namqpUris: [amqp://h]\nprefech: 10\n")


def test_at_least_one_uri_is_required(tmp_path):
    with pytest.raises(ConfigError) as caught:
        validate(tmp_path, "name: R\ndriver: rabbitmq\namqpUris: []\n")
    assert caught.value.path == "amqpUris"


@pytest.mark.parametrize(
    ("uri", "problem"),
    [
        ("http://guest:hunter2@h", "not an amqp"),
        ("amqp://guest:hunter2@h:notaport", "Port"),
        ("amqp://guest:hunter2@h/%2F?heartbeat=soon", "heartbeat"),
    ],
)
def test_a_bad_uri_is_reported_without_its_password(tmp_path, uri, problem):
    with pytest.raises(ConfigError) as caught:
        validate(tmp_path, f"name: R\ndriver: rabbitmq\namqpUris: ['amqp://ok', '{uri}']\n")
    message = str(caught.value)
    assert caught.value.path == "amqpUris[1]"
    assert problem in message
    assert "hunter2" not in message and "guest:***@h" in message


def test_stream_queues_need_manual_acks_and_a_prefetch(tmp_path):
    base = "name: R\ndriver: rabbitmq\namqpUris: [amqp://h]\nqueueType: STREAM\n"
    assert validate(tmp_path, base).queue_type is QueueType.STREAM
    with pytest.raises(ConfigError, match="manual acks"):
        validate(tmp_path, base + "autoAck: true\n")


@pytest.mark.parametrize(
    ("uri", "masked"),
    [
        ("amqp://user:pw@host:5672/%2F", "amqp://user:***@host:5672/%2F"),
        ("amqps://user:p%40ss@host/vh", "amqps://user:***@host/vh"),
        ("amqp://user@host", "amqp://user@host"),
        ("amqp://host", "amqp://host"),
    ],
)
def test_passwords_are_masked(uri, masked):
    assert mask_password(uri) == masked


def test_partitions_are_routing_keys_and_one_queue_each_per_subscription():
    assert routing_keys(3) == ["0", "1", "2"]
    assert queue_names("t", "s", 3) == ["t-s-part-0", "t-s-part-1", "t-s-part-2"]
    assert queue_names("t", "s", 1) == ["t-s"]  # OMB's name for the unpartitioned queue


def test_queue_type_becomes_the_x_queue_type_argument():
    assert queue_arguments(QueueType.CLASSIC) == {}
    assert queue_arguments(QueueType.QUORUM) == {"x-queue-type": "quorum"}
    assert queue_arguments(QueueType.STREAM) == {"x-queue-type": "stream"}


def test_a_fanout_exchange_cannot_have_partitions():
    check_partitions(ExchangeType.FANOUT, 1, "f.yaml")
    check_partitions(ExchangeType.DIRECT, 16, "f.yaml")
    with pytest.raises(ConfigError) as caught:
        check_partitions(ExchangeType.FANOUT, 4, "f.yaml")
    assert caught.value.path == "exchangeType"


def test_key_partition_is_crc32_so_every_process_agrees():
    assert key_partition(b"abc", 16) == 0x352441C2 % 16
    assert {key_partition(bytes([i]), 4) for i in range(64)} == {0, 1, 2, 3}


def test_creation_is_paced_after_every_batch_like_omb(monkeypatch):
    from loadgen_drivers.rabbitmq import driver as rabbitmq_driver

    slept = []
    monkeypatch.setattr(rabbitmq_driver.time, "sleep", slept.append)
    pacing = rabbitmq_driver.CreationPacing(batch_size=5, delay_ms=100)
    for _ in range(12):
        pacing.next()
    assert slept == [0.1, 0.1]  # before the 6th and the 11th client
    unpaced = rabbitmq_driver.CreationPacing(batch_size=5, delay_ms=0)
    for _ in range(12):
        unpaced.next()
    assert slept == [0.1, 0.1]


def test_amqps_tls_query_keys_are_taken_out_for_pika_and_override_the_file(tmp_path):
    from loadgen_drivers.rabbitmq.config import connection_parameters
    from loadgen_drivers.rabbitmq.tls import TlsSettings, settings_for, split_tls_query

    uri = "amqps://u:p@h:5671/%2F?heartbeat=5&verify=verify_none&server_name_indication=x.example"
    assert split_tls_query(uri) == (
        "amqps://u:p@h:5671/%2F?heartbeat=5",
        {"verify": "verify_none", "server_name_indication": "x.example"},
    )
    file_block = TlsSettings(server_name_indication="file.example")
    settings = settings_for(uri, file_block)
    assert settings.verify == "verify_none" and settings.server_name_indication == "x.example"
    assert settings_for("amqp://h", file_block) is None
    parameters = connection_parameters(uri, 1.0, file_block)
    assert parameters.heartbeat == 5 and parameters.ssl_options.server_hostname == "x.example"
    assert connection_parameters("amqp://h", 1.0, file_block).ssl_options is None


@pytest.mark.parametrize(
    "query, named",
    [
        ("cacertfile=/nonexistent/ca.pem", "cacertfile /nonexistent/ca.pem"),
        ("verify=verify_maybe", "verify"),
    ],
)
def test_bad_amqps_tls_settings_are_config_errors_naming_the_uri(tmp_path, query, named):
    text = f"name: R\ndriver: rabbitmq\namqpUris: ['amqps://u:secretpw@h/%2F?{query}']\n"
    with pytest.raises(ConfigError) as caught:
        validate(tmp_path, text)
    message = str(caught.value)
    assert "amqpUris[0]" in message and named in message and "secretpw" not in message
