"""OMB's Kafka driver YAML, read for librdkafka (confluent-kafka).

OMB's file carries Java client properties as ``.properties`` text. Most keys mean the same in
librdkafka; the Java-only ones are handled here, explicitly:

* key/value (de)serializers: dropped (OMB forces byte/string (de)serializers).
* ``buffer.memory`` (bytes) becomes ``queue.buffering.max.kbytes`` (bytes / 1024).
* ``max.request.size`` becomes ``message.max.bytes`` (librdkafka's request cap).
* ``request.timeout.ms`` above 900000 (OMB's throughput file has 1200000) is capped at
  librdkafka's maximum, with one warning.
* ``default.api.timeout.ms``, ``max.block.ms``, ``metadata.max.idle.ms``,
  ``interceptor.classes``: no librdkafka equivalent; dropped with one warning.
* security settings (SASL/JAAS, key and trust stores): see :mod:`loadgen_drivers.kafka.security`;
  ``ssl.protocol``, ``ssl.enabled.protocols`` and the key/trust manager algorithms are dropped
  with a warning (librdkafka takes OpenSSL's protocol defaults).
* anything else goes to librdkafka, and a key or value it rejects is a ConfigError naming the
  file and key path.

Validation instantiates the client with no ``bootstrap.servers``, which makes librdkafka check
every key while contacting nobody.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from loadgen.base.errors import ConfigError
from loadgen.base.properties import logical_lines
from loadgen.base.redaction import looks_secret
from loadgen_drivers.kafka.security import SECURITY_KEYS, translate_security

log = logging.getLogger("loadgen.kafka")

DROPPED_SILENTLY = {
    "key.serializer",
    "value.serializer",
    "key.deserializer",
    "value.deserializer",
}
LIBRDKAFKA_MAXIMUMS = {"request.timeout.ms": 900_000}
JAVA_INT_MAX = 2**31 - 1
TRANSACTION_FIELDS = {
    "transaction_duration_ms": "transactionDurationMs",
    "messages_per_transaction": "messagesPerTransaction",
    "transaction_abort_ratio": "transactionAbortRatio",
}
DROPPED_WITH_WARNING = {
    "default.api.timeout.ms",
    "max.block.ms",
    "metadata.max.idle.ms",
    "interceptor.classes",
    "ssl.protocol",
    "ssl.enabled.protocols",
    "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm",
}


def parse_properties(text: str) -> dict[str, str]:
    """Java ``.properties`` text (:mod:`loadgen.base.properties`): ``k=v`` or ``k: v``, ``\\``
    continuations, ``#``/``!`` comments, blank lines. An error names the line by its number,
    never its text: it may hold a secret."""
    properties = {}
    for line in logical_lines(text):
        if line.is_blank or line.is_comment:
            continue
        cut = line.separator()
        if cut < 0:
            raise ValueError(f"line {line.number} is not a 'key=value' line")
        properties[line.text[:cut].strip()] = line.text[cut + 1 :].strip()
    return properties


def _properties_field(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}
    if isinstance(value, str):
        return parse_properties(value)
    raise ValueError("expected .properties text or a mapping")


class KafkaConfig(BaseModel):
    """The broker section of a Kafka driver file (OMB field names)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    replication_factor: int = Field(default=0, alias="replicationFactor", ge=0)
    """OMB's replication factor of the topics the run creates; 0, the default, leaves it to the
    broker (``default.replication.factor``)."""
    reset: bool = False
    """OMB's flag to delete every topic of the cluster before the run; accepted for OMB's files,
    and loadgen does nothing with it."""
    topic_config: dict[str, str] = Field(default_factory=dict, alias="topicConfig")
    """OMB's topic configs for the topics the run creates (``.properties`` text or a mapping),
    given to the broker unchanged at creation."""
    common_config: dict[str, str] = Field(alias="commonConfig")
    """OMB's Java client properties for every client (producers, consumers, admin), as
    ``.properties`` text or a mapping, translated for librdkafka; ``bootstrap.servers`` goes
    here."""
    producer_config: dict[str, str] = Field(alias="producerConfig")
    """OMB's Java producer properties, merged over ``commonConfig`` (its keys win) and translated
    for librdkafka the same way."""
    consumer_config: dict[str, str] = Field(alias="consumerConfig")
    """OMB's Java consumer properties, merged over ``commonConfig`` (its keys win) and translated
    for librdkafka the same way; ``group.id`` is set to the subscription's name."""
    consumer_assignment: Literal["subscribe", "assign"] = Field(
        default="subscribe", alias="consumerAssignment"
    )
    """loadgen's: ``subscribe`` joins the subscription's group (OMB); ``assign`` takes every
    partition of the topic without a group join, which saves the join's seconds (a probe's
    first line) but gives each consumer every message, so use one consumer per subscription."""

    transaction_duration_ms: int | None = Field(
        default=None, alias="transactionDurationMs", ge=1, le=JAVA_INT_MAX
    )
    """loadgen's, as kafka-producer-perf-test's ``--transaction-duration-ms``: a transaction is
    committed once it is this old (3000 when ``producerConfig`` sets ``transactional.id`` and
    this is not given, as the Java tool does). Needs ``transactional.id``."""
    messages_per_transaction: int | None = Field(
        default=None, alias="messagesPerTransaction", ge=1, le=JAVA_INT_MAX
    )
    """loadgen's, as pulsar-perf's ``--numMessage-perTransaction``: a transaction is committed
    once it holds this many messages (or is ``transactionDurationMs`` old, whichever comes
    first). Needs ``transactional.id``."""
    transaction_abort_ratio: float = Field(default=0.0, alias="transactionAbortRatio", ge=0, le=1)
    """loadgen's: this share of the transactions, evenly spread, is aborted instead of committed
    (their messages withdrawn: a ``read_committed`` consumer must never see one). Needs
    ``transactional.id``."""

    _properties = field_validator(
        "topic_config", "common_config", "producer_config", "consumer_config", mode="before"
    )(_properties_field)

    @model_validator(mode="after")
    def _transactions_need_an_id(self) -> KafkaConfig:
        given = [name for name in TRANSACTION_FIELDS if name in self.model_fields_set]
        if given and not self.transactional:
            raise ConfigError(
                f"{TRANSACTION_FIELDS[given[0]]} needs transactions: set transactional.id in "
                "producerConfig (the Java producer's property, which turns them on)",
                path=TRANSACTION_FIELDS[given[0]],
                value=getattr(self, given[0]),
                allowed="producerConfig with transactional.id",
            )
        return self

    @property
    def transactional(self) -> bool:
        return bool(self.producer_config.get("transactional.id"))

    @property
    def bootstrap_servers(self) -> str:
        return self.common_config.get("bootstrap.servers", "")

    @property
    def auto_commit(self) -> bool:
        return self.consumer_config.get("enable.auto.commit", "false").lower() == "true"


def to_librdkafka(
    section: str, properties: Mapping[str, str], source: str | None
) -> dict[str, str]:
    """Translate one properties block; warn once per dropped Java-only key."""
    translated = translate_security(section, properties, source)
    for key, value in properties.items():
        if key in DROPPED_SILENTLY or key in SECURITY_KEYS or key in translated:
            continue
        if key in DROPPED_WITH_WARNING:
            log.warning("%s: %s.%s has no librdkafka equivalent; ignored", source, section, key)
            continue
        if key == "buffer.memory":
            translated["queue.buffering.max.kbytes"] = str(max(1, int(value) // 1024))
            continue
        if key == "max.request.size":
            translated["message.max.bytes"] = value
            continue
        maximum = LIBRDKAFKA_MAXIMUMS.get(key)
        if maximum is not None and value.isdigit() and int(value) > maximum:
            log.warning(
                "%s: %s.%s=%s is above librdkafka's maximum; using %d",
                source,
                section,
                key,
                value,
                maximum,
            )
            value = str(maximum)
        translated[key] = value
    return translated


def check_with_librdkafka(section: str, conf: Mapping[str, str], source: str | None) -> None:
    """Let librdkafka reject unknown keys and bad values, without any network traffic."""
    from confluent_kafka import KafkaException, Producer  # here: the model is read without it

    offline = {k: v for k, v in conf.items() if k != "bootstrap.servers"}
    offline.pop("group.id", None)
    try:
        Producer({**offline, "log_level": 0}) if section != "consumerConfig" else _consumer(offline)
    except KafkaException as error:
        message = _without_secrets(
            (error.args[0].str() if error.args else str(error)).strip(), conf
        )
        key = _rejected_key(message, conf)
        raise ConfigError(
            message,
            file=source,
            path=f"{section}.{key}" if key else section,
            value=conf.get(key) if key else None,
            allowed="librdkafka configuration properties (see librdkafka CONFIGURATION.md)",
        ) from None


def _without_secrets(message: str, conf: Mapping[str, str]) -> str:
    """librdkafka may quote a rejected value; a secret one must not reach the console."""
    for key, value in conf.items():
        if value and looks_secret(key):
            message = message.replace(value, "<redacted>")
    return message


def _consumer(conf: Mapping[str, str]) -> None:
    from confluent_kafka import Consumer

    Consumer({**conf, "group.id": "loadgen-validate", "log_level": 0}).close()


def _rejected_key(message: str, conf: Mapping[str, str]) -> str | None:
    quoted = [part for part in message.split('"')[1::2] if part in conf]
    if quoted:
        return quoted[0]
    return next((key for key in conf if key in message), None)
