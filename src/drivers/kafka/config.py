"""The Kafka driver file (OMB's fields), checked completely before anything connects.

librdkafka is the authority on its own keys and values, so the check builds each client once
with ``bootstrap.servers`` removed: librdkafka then validates every setting while it has nobody
to contact, and the client is discarded. Java-only keys are translated first
(:mod:`drivers.kafka.properties`), and a rejection is reported at the key the user wrote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from pydantic import BaseModel, ConfigDict, Field, field_validator

from drivers.kafka.properties import ClientConf, is_secret, properties_from, to_librdkafka
from loadgen.errors import ConfigError
from loadgen.spec import parse_model
from loadgen.spec.driver_spec import DriverSpec

LIBRDKAFKA_KEYS = "librdkafka configuration properties (see librdkafka's CONFIGURATION.md)"


class KafkaConfig(BaseModel):
    """The broker section of a Kafka driver file; ``*Config`` values are Java properties."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    replication_factor: int = Field(default=0, alias="replicationFactor", ge=-1)
    """0 (or -1): the broker's default replication factor."""
    reset: bool = False
    """OMB deletes every topic of the cluster; loadgen only the ones named with its prefix."""
    topic_config: dict[str, str] = Field(default_factory=dict, alias="topicConfig")
    common_config: dict[str, str] = Field(alias="commonConfig")
    producer_config: dict[str, str] = Field(alias="producerConfig")
    consumer_config: dict[str, str] = Field(alias="consumerConfig")

    @field_validator(
        "topic_config", "common_config", "producer_config", "consumer_config", mode="before"
    )
    @classmethod
    def _read_properties(cls, value: Any) -> dict[str, str]:
        return properties_from(value)


@dataclass(frozen=True)
class ClientConfs:
    """What each librdkafka client gets: common settings, overridden by its own section's."""

    admin: ClientConf
    producer: ClientConf
    consumer: ClientConf

    @property
    def bootstrap_servers(self) -> str:
        return self.admin.settings["bootstrap.servers"]


def load_config(spec: DriverSpec) -> tuple[KafkaConfig, ClientConfs]:
    """Parse and fully check ``spec``'s Kafka section; no network traffic."""
    config = parse_model(KafkaConfig, dict(spec.config), file=spec.source, lenient=spec.lenient)
    common = to_librdkafka("commonConfig", config.common_config, spec.source)
    if not common.settings.get("bootstrap.servers"):
        raise ConfigError(
            "bootstrap.servers is required",
            file=spec.source,
            path="commonConfig.bootstrap.servers",
            allowed="host:port[,host:port...]",
        )
    confs = ClientConfs(
        admin=common,
        producer=common | to_librdkafka("producerConfig", config.producer_config, spec.source),
        consumer=common | to_librdkafka("consumerConfig", config.consumer_config, spec.source),
    )
    check_offline("producer", confs.producer, spec.source)
    check_offline("consumer", confs.consumer, spec.source)
    return config, confs


def check_offline(kind: str, conf: ClientConf, source: str | None) -> None:
    """Let librdkafka judge ``conf`` for a ``kind`` client without contacting any broker."""
    try:
        _build_offline(kind, conf.settings)
    except KafkaException as error:
        reason = _reason(error)
        key = _culprit(kind, conf.settings, reason)
        if key is None:
            raise ConfigError(
                f"librdkafka rejects the {kind} settings: {reason}",
                file=source,
                path=f"{kind}Config",
                allowed=LIBRDKAFKA_KEYS,
            ) from None
        value = conf.settings[key]
        if is_secret(key):
            reason, value = reason.replace(value, "***"), "***"
        raise ConfigError(
            f"librdkafka rejects it: {reason}",
            file=source,
            path=conf.origins.get(key, f"{kind}Config.{key}"),
            value=value,
            allowed=LIBRDKAFKA_KEYS,
        ) from None


def _build_offline(kind: str, settings: dict[str, str]) -> None:
    """Create and discard a client that has no broker to talk to (and logs nothing)."""
    offline = {key: value for key, value in settings.items() if key != "bootstrap.servers"}
    offline["log_level"] = "0"
    if kind == "consumer":
        Consumer({**offline, "group.id": "loadgen-validate"}).close()
    else:
        Producer(offline)


def _reason(error: KafkaException) -> str:
    cause = error.args[0] if error.args else error
    return (cause.str() if isinstance(cause, KafkaError) else str(cause)).strip()


def _culprit(kind: str, settings: dict[str, str], reason: str) -> str | None:
    """The key librdkafka objects to: the one it quotes, else the one whose removal satisfies it."""
    for quoted in re.findall(r'["`]([^"`]+)["`]', reason):
        if quoted in settings:
            return quoted
    for key in settings:
        if key == "bootstrap.servers":
            continue
        try:
            _build_offline(kind, {k: v for k, v in settings.items() if k != key})
        except KafkaException:
            continue
        return key
    return None
