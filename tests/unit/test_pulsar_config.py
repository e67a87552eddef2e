"""The Pulsar driver file and how each field becomes a pulsar-client argument, without a broker."""

import logging

import pulsar
import pytest

from loadgen.base.errors import ConfigError
from loadgen.driver_api import open_driver
from loadgen.driver_api.driver_file import spec_from_dict
from loadgen.spec.loader import load_yaml
from loadgen_drivers.pulsar import Driver
from loadgen_drivers.pulsar.admin import auth_headers, rest_path
from loadgen_drivers.pulsar.client import (
    SwitchEveryNDelays,
    client_kwargs,
    consumer_kwargs,
    producer_kwargs,
)
from loadgen_drivers.pulsar.config import AckMode, BatchingType, SubscriptionType, TopicType

OMB_PULSAR_YAML = """\
name: Pulsar
driverClass: io.openmessaging.benchmark.driver.pulsar.PulsarBenchmarkDriver
client:
  serviceUrl: pulsar://localhost:6650
  httpUrl: http://localhost:8080
  ioThreads: 16
  connectionsPerBroker: 8
  clusterName: local
  namespacePrefix: benchmark/ns
  topicType: persistent
  persistence:
    ensembleSize: 3
    writeQuorum: 3
    ackQuorum: 2
    deduplicationEnabled: false
  tlsAllowInsecureConnection: false
  tlsEnableHostnameVerification: false
  tlsTrustCertsFilePath:
  authentication:
    plugin:
    data:
producer:
  batchingEnabled: true
  batchingMaxPublishDelayMs: 1
  batchingMaxBytes: 131072
  blockIfQueueFull: true
  pendingQueueSize: 0
consumer:
  receiverQueueSize: 10000
  subscriptionType: Failover
"""
"""OMB's shipped driver-pulsar/pulsar.yaml, with its empty TLS/auth fields."""

MINIMAL = "name: P\ndriver: pulsar\nclient:\n  serviceUrl: pulsar://h:6650\n"


def validate(tmp_path, text):
    path = tmp_path / "pulsar.yaml"
    path.write_text(text)
    return Driver.validate_config(spec_from_dict(load_yaml(path), source=str(path)))


def with_sections(tmp_path, **sections):
    """MINIMAL plus ``producer:``/``consumer:`` blocks given as {field: yaml value}."""
    text = MINIMAL
    for section, fields in sections.items():
        text += f"{section}:\n" + "".join(f"  {k}: {v}\n" for k, v in fields.items())
    return validate(tmp_path, text)


def test_omb_driver_file_is_read_with_omb_meanings(tmp_path):
    config = validate(tmp_path, OMB_PULSAR_YAML)
    assert config.client.http_url == "http://localhost:8080"
    assert config.client.tls_trust_certs_file_path is None  # empty = unset, not an NPE
    assert config.client.authentication.plugin is None
    assert config.producer.batching_max_bytes == 131072
    assert config.consumer.subscription_type is SubscriptionType.FAILOVER


def test_defaults_are_omb_and_apache_pulsar_not_the_test_broker(tmp_path):
    config = validate(tmp_path, MINIMAL)
    client, producer, consumer = config.client, config.producer, config.consumer
    assert (client.io_threads, client.namespace_prefix) == (8, "benchmark/ns")
    assert client.topic_type is TopicType.PERSISTENT
    assert (client.persistence.ensemble_size, client.persistence.ack_quorum) == (3, 2)
    assert producer.batching_enabled and producer.block_if_queue_full
    assert (producer.batching_max_publish_delay_ms, producer.batching_max_bytes) == (1, 1_048_576)
    assert producer.batching_max_messages == 2**31 - 1  # OMB hard-codes Integer.MAX_VALUE
    assert (producer.pending_queue_size, producer.send_timeout_ms) == (0, 0)
    assert consumer.receiver_queue_size == 10_000
    assert consumer.max_total_receiver_queue_size == 2**31 - 1
    assert consumer.subscription_type is SubscriptionType.FAILOVER
    assert consumer.ack_mode is AckMode.INDIVIDUAL
    assert consumer.initial_position == "Latest"


def test_every_client_field_reaches_the_client_arguments(tmp_path):
    config = validate(
        tmp_path,
        MINIMAL + "  ioThreads: 3\n  listenerThreads: 2\n  maxConcurrentLookupRequests: 77\n"
        "  operationTimeoutSeconds: 9\n  tlsTrustCertsFilePath: /ca.pem\n"
        "  tlsAllowInsecureConnection: true\n  tlsEnableHostnameVerification: true\n",
    )
    kwargs = client_kwargs(config.client)
    assert kwargs["io_threads"] == 3
    assert kwargs["message_listener_threads"] == 2
    assert kwargs["concurrent_lookup_requests"] == 77
    assert kwargs["operation_timeout_seconds"] == 9
    assert kwargs["tls_trust_certs_file_path"] == "/ca.pem"
    assert kwargs["tls_allow_insecure_connection"] is True
    assert kwargs["tls_validate_hostname"] is True
    assert "authentication" not in kwargs


def test_authentication_becomes_a_client_plugin_and_an_admin_header(tmp_path):
    config = validate(
        tmp_path,
        MINIMAL + "  authentication:\n    plugin: org.apache.pulsar.client.impl.auth."
        "AuthenticationToken\n    data: 'token:abc'\n",
    )
    assert isinstance(client_kwargs(config.client)["authentication"], pulsar.Authentication)
    assert auth_headers(config.client.authentication) == {"Authorization": "Bearer abc"}


def test_every_producer_field_reaches_create_producer(tmp_path):
    config = with_sections(
        tmp_path,
        producer={
            "batchingEnabled": "false",
            "batchingMaxPublishDelayMs": 7,
            "batchingMaxBytes": 4096,
            "batchingMaxMessages": 50,
            "batchingType": "key-based",
            "blockIfQueueFull": "false",
            "pendingQueueSize": 500,
            "maxPendingMessagesAcrossPartitions": 9000,
            "sendTimeoutMs": 3000,
        },
    )
    assert producer_kwargs(config.producer) == {
        "batching_enabled": False,
        "batching_max_publish_delay_ms": 7,
        "batching_max_allowed_size_in_bytes": 4096,
        "batching_max_messages": 50,
        "batching_type": pulsar.BatchingType.KeyBased,
        "block_if_queue_full": False,
        "max_pending_messages": 500,
        "max_pending_messages_across_partitions": 9000,
        "send_timeout_millis": 3000,
    }


@pytest.mark.parametrize("spelling", ["KEY_BASED", "key-based", "KeyBased"])
def test_batching_type_accepts_java_and_loadgen_spellings(tmp_path, spelling):
    config = with_sections(tmp_path, producer={"batchingType": spelling})
    assert config.producer.batching_type is BatchingType.KEY_BASED


def test_partition_switch_frequency_installs_the_java_router(tmp_path, monkeypatch):
    assert "message_router" not in producer_kwargs(validate(tmp_path, MINIMAL).producer)
    config = with_sections(
        tmp_path,
        producer={
            "batchingMaxPublishDelayMs": 2,
            "batchingPartitionSwitchFrequencyByPublishDelay": 5,
        },
    )
    router = producer_kwargs(config.producer)["message_router"]
    assert isinstance(router, SwitchEveryNDelays)
    clock = iter([0, 9_999_999, 10_000_000, 20_000_000])
    monkeypatch.setattr("loadgen_drivers.pulsar.client.monotonic_ns", lambda: next(clock))
    unkeyed = type("M", (), {"partition_key": lambda self: ""})()
    picks = [router(unkeyed, 16) for _ in range(4)]
    assert picks[0] == picks[1] != picks[2] != picks[3]  # one partition per 5 × 2 ms
    keyed = type("M", (), {"partition_key": lambda self: "k"})()
    assert router(keyed, 16) == router(keyed, 16)


def test_every_consumer_field_reaches_subscribe(tmp_path):
    config = with_sections(
        tmp_path,
        consumer={
            "receiverQueueSize": 100,
            "maxTotalReceiverQueueSizeAcrossPartitions": 800,
            "subscriptionType": "Key_Shared",
            "ackMode": "batch-index",
            "subscriptionInitialPosition": "Earliest",
        },
    )
    assert consumer_kwargs(config.consumer) == {
        "consumer_type": pulsar.ConsumerType.KeyShared,
        "receiver_queue_size": 100,
        "max_total_receiver_queue_size_across_partitions": 800,
        "initial_position": pulsar.InitialPosition.Earliest,
        "batch_index_ack_enabled": True,
    }


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Exclusive", pulsar.ConsumerType.Exclusive),
        ("Shared", pulsar.ConsumerType.Shared),
        ("Failover", pulsar.ConsumerType.Failover),
        ("Key_Shared", pulsar.ConsumerType.KeyShared),
        ("KeyShared", pulsar.ConsumerType.KeyShared),
    ],
)
def test_subscription_types_map_to_the_client(tmp_path, name, expected):
    config = with_sections(tmp_path, consumer={"subscriptionType": name})
    assert consumer_kwargs(config.consumer)["consumer_type"] == expected


def test_an_invalid_subscription_type_exits_2_naming_the_allowed_ones(tmp_path):
    with pytest.raises(ConfigError) as caught:
        with_sections(tmp_path, consumer={"subscriptionType": "Shard"})
    assert caught.value.exit_code == 2
    assert caught.value.path == "consumer.subscriptionType"
    assert "Exclusive, Shared, Failover, Key_Shared" in str(caught.value)
    assert "pulsar.yaml" in str(caught.value)


def test_cumulative_acks_are_refused_on_shared_subscriptions(tmp_path):
    ok = with_sections(tmp_path, consumer={"ackMode": "cumulative", "subscriptionType": "Failover"})
    assert ok.consumer.ack_mode is AckMode.CUMULATIVE
    with pytest.raises(ConfigError) as caught:
        with_sections(tmp_path, consumer={"ackMode": "cumulative", "subscriptionType": "Shared"})
    assert caught.value.path == "consumer.ackMode"
    assert "individual, batch-index" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("name: P\ndriver: pulsar\nclient:\n  serviceUrl: http://h:6650\n", "client.serviceUrl"),
        (MINIMAL + "  httpUrl: h:8080\n", "client.httpUrl"),
        (MINIMAL + "  namespacePrefix: benchmark\n", "client.namespacePrefix"),
        (MINIMAL + "  topicType: durable\n", "client.topicType"),
        (MINIMAL + "  ioThreads: 0\n", "client.ioThreads"),
        (MINIMAL + "  persistence:\n    writeQuorum: 4\n", "client.persistence.ackQuorum"),
        (MINIMAL + "producer:\n  batchingMaxBytes: 0\n", "producer.batchingMaxBytes"),
        (MINIMAL + "consumer:\n  ackMode: sometimes\n", "consumer.ackMode"),
        (MINIMAL + "consumer:\n  recieverQueueSize: 5\n", "consumer.recieverQueueSize"),
        ("name: P\ndriver: pulsar\nclient: {}\n", "client.serviceUrl"),
    ],
)
def test_bad_values_exit_2_naming_the_field(tmp_path, text, path):
    with pytest.raises(ConfigError) as caught:
        validate(tmp_path, text)
    assert caught.value.exit_code == 2
    assert caught.value.path == path


def test_non_persistent_topics_accept_omb_s_enum_spelling(tmp_path):
    config = validate(tmp_path, MINIMAL + "  topicType: non_persistent\n")
    assert config.client.topic_type is TopicType.NON_PERSISTENT


def test_fields_the_python_client_cannot_set_are_warned_about(tmp_path, caplog):
    path = tmp_path / "pulsar.yaml"
    path.write_text(OMB_PULSAR_YAML)
    with caplog.at_level(logging.WARNING, logger="loadgen.pulsar"):
        Driver.from_config(spec_from_dict(load_yaml(path), source=str(path)))
    assert "client.connectionsPerBroker is not applied" in caplog.text
    caplog.clear()
    path.write_text(MINIMAL)
    with caplog.at_level(logging.WARNING, logger="loadgen.pulsar"):
        Driver.from_config(spec_from_dict(load_yaml(path), source=str(path)))
    assert "not applied" not in caplog.text


def test_topic_names_follow_omb_and_the_admin_api_paths():
    client = {"serviceUrl": "pulsar://h:1", "topicType": "non-persistent"}
    driver = Driver.from_config(
        spec_from_dict({"name": "P", "driver": "pulsar", "client": client}, source="x")
    )
    prefix = driver.topic_name_prefix
    assert prefix.startswith("non-persistent://benchmark/ns-") and prefix.endswith("/test")
    assert len(driver.namespace) == len("benchmark/ns-") + 7
    assert rest_path("persistent://t/ns/x") == "persistent/t/ns/x"


@pytest.mark.parametrize(("content", "why"), [(None, "No such file"), ("not a pem", "X509")])
def test_a_ca_file_that_cannot_be_read_is_exit_2_naming_driver_file_field_and_value(
    tmp_path, content, why
):
    """Seen as a FileNotFoundError traceback before: the admin REST made its TLS context."""
    ca = tmp_path / "ca.pem"
    if content is not None:
        ca.write_text(content)
    spec = spec_from_dict(
        {"name": "secured", "driver": "pulsar", "client": {
            "serviceUrl": "pulsar+ssl://127.0.0.1:1", "httpUrl": "https://127.0.0.1:1",
            "tlsTrustCertsFilePath": str(ca),
        }},
        source="secured.yaml",
    )  # fmt: skip
    with pytest.raises(ConfigError) as caught:
        open_driver(spec)
    assert caught.value.exit_code == 2
    shown = str(caught.value)
    assert shown.startswith("secured.yaml: client.tlsTrustCertsFilePath: the CA file cannot")
    assert why in shown and str(ca) in shown
