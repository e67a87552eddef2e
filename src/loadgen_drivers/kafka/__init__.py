"""Kafka driver (confluent-kafka); see ``loadgen_drivers.kafka.driver`` for its semantics.

The entry point's class: what the engine knows about Kafka without connecting. It imports no
client (confluent-kafka is imported by :meth:`Driver.implementation`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

from loadgen.driver_api import BaseDriver, LocalStarter, require_address

DEFAULT_PORT = 9092
SECURITY_PROTOCOL_LINE = re.compile(r"^\s*security\.protocol\s*[=:]\s*(\S+)", re.MULTILINE)


def set_property(block: Any, key: str, value: str) -> Any:
    """Set ``key`` in a properties block that may be a mapping or ``.properties`` text."""
    if isinstance(block, Mapping):
        return {**block, key: value}
    text = block or ""
    return f"{text.rstrip()}\n{key}={value}\n".lstrip()


def _servers(url: str) -> str:
    hosts = require_address(url).split(",")
    return ",".join(host if ":" in host else f"{host}:{DEFAULT_PORT}" for host in hosts)


def _asks_for_tls(common: Any) -> bool:
    if isinstance(common, Mapping):
        protocols = [str(common.get("security.protocol", ""))]
    else:  # .properties text: the last line for a key wins
        protocols = SECURITY_PROTOCOL_LINE.findall(common) or [""]
    return "SSL" in protocols[-1].upper()


class Driver(BaseDriver):
    """Selected by ``driver: kafka`` or by OMB's Kafka ``driverClass``."""

    display_name = "Kafka"
    url_schemes = ("kafka", "kafka+ssl")
    omb_driver_classes = ("io.openmessaging.benchmark.driver.kafka.KafkaBenchmarkDriver",)
    client_distributions = ("confluent-kafka",)
    config_model = "loadgen_drivers.kafka.config:KafkaConfig"
    secret_fields = ("sasl.jaas", "ssl.key.pem", "keystore.key")  # JAAS text, inline PEM keys
    local_broker = LocalStarter("loadgen_drivers.kafka.local.tansu:start_tansu", 19092)
    secured_local_broker = LocalStarter(
        "loadgen_drivers.kafka.local.secure:start_secure_kafka", 19093
    )
    upstream_local_broker = LocalStarter(
        "loadgen_drivers.kafka.local.upstream:start_upstream_kafka", 29092
    )
    secured_upstream_local_broker = LocalStarter(
        "loadgen_drivers.kafka.local.upstream:start_secured_upstream_kafka", 29093
    )
    run_defaults: ClassVar[Mapping[str, Any]] = {  # what OMB's Kafka files say
        "producerConfig": {"acks": "all"},
        "consumerConfig": {"auto.offset.reset": "earliest", "enable.auto.commit": "false"},
    }
    probe_defaults: ClassVar[Mapping[str, Any]] = {  # latency-minded, for a real cluster
        "replicationFactor": 0,
        "producerConfig": {"acks": "all", "linger.ms": "0"},
        "consumerConfig": {"enable.auto.commit": "false"},
    }
    probe_named_topics = True  # a consumer group is all a probe adds, and it holds nothing

    @classmethod
    def config_from_url(cls, url: str, config: Mapping[str, Any]) -> dict[str, Any]:
        """``kafka+ssl://`` also asks for TLS, unless the file already asks for SASL over TLS."""
        common = set_property(config.get("commonConfig"), "bootstrap.servers", _servers(url))
        if url.startswith("kafka+ssl:") and not _asks_for_tls(common):
            common = set_property(common, "security.protocol", "SSL")
        return {**config, "commonConfig": common}

    @classmethod
    def probe_config(cls, config: Mapping[str, Any]) -> dict[str, Any]:
        """A probe reads what it sends, never the topic's history (which a ``--topic`` may
        have), and assigns itself the partition unless the file says ``subscribe``: no group
        join, so the first line shows in under 2 s."""
        consumer = set_property(config.get("consumerConfig"), "auto.offset.reset", "latest")
        return {"consumerAssignment": "assign", **config, "consumerConfig": consumer}

    @classmethod
    def implementation(cls) -> type[BaseDriver]:
        from loadgen_drivers.kafka.driver import KafkaDriver  # imports confluent-kafka

        return KafkaDriver


__all__ = ["Driver"]
