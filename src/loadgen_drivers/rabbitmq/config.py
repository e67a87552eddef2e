"""The RabbitMQ driver file: OMB's fields, the routing-key fork's fields, and loadgen's own.

OMB's upstream driver reads ``amqpUris``, ``messagePersistence``, ``queueType`` and the
creation delays/batch sizes; the fork used for the Kafka/Pulsar/RabbitMQ comparison adds
``exchangeType`` and ``topicPrefix``. The remaining fields are loadgen's: how many producers and
consumers share a connection, publisher confirms and their window, ``mandatory``, consumer
``prefetch`` and ``autoAck``, and ``recoveryIntervalMs``. Everything is checked before
anything connects.
"""

from __future__ import annotations

import ssl
from enum import StrEnum
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from loadgen.base.errors import ConfigError
from loadgen_drivers.rabbitmq.tls import TlsSettings, settings_for, split_tls_query, ssl_options

if TYPE_CHECKING:
    import pika

DEFAULT_PORT = 5672


class QueueType(StrEnum):
    CLASSIC = "CLASSIC"
    QUORUM = "QUORUM"
    STREAM = "STREAM"


class ExchangeType(StrEnum):
    DIRECT = "direct"
    TOPIC = "topic"
    FANOUT = "fanout"


class RabbitMqConfig(BaseModel):
    """The broker section of a RabbitMQ driver file."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    amqp_uris: list[str] = Field(alias="amqpUris", min_length=1)
    """OMB's broker URIs, ``amqp://user:password@host:port/vhost`` or ``amqps://``; topics are
    spread over them by CRC-32 of their name."""
    message_persistence: bool = Field(default=False, alias="messagePersistence")
    """OMB's: publish persistent messages (delivery mode 2); false: transient ones."""
    queue_type: QueueType = Field(default=QueueType.CLASSIC, alias="queueType")
    """OMB's type of every subscription queue (``x-queue-type``): ``CLASSIC``, ``QUORUM`` or
    ``STREAM`` (which needs ``autoAck: false`` and a ``prefetch``)."""
    producer_creation_delay_ms: int = Field(default=100, alias="producerCreationDelay", ge=0)
    """OMB's pause before each further batch of ``producerCreationBatchSize`` producers, in ms,
    so connections do not all open at once; 0: none."""
    producer_creation_batch_size: int = Field(default=5, alias="producerCreationBatchSize", ge=1)
    """OMB's number of producers created between two ``producerCreationDelay`` pauses."""
    consumer_creation_delay_ms: int = Field(default=100, alias="consumerCreationDelay", ge=0)
    """OMB's pause before each further batch of ``consumerCreationBatchSize`` consumers, in ms;
    0: none."""
    consumer_creation_batch_size: int = Field(default=5, alias="consumerCreationBatchSize", ge=1)
    """OMB's number of consumers created between two ``consumerCreationDelay`` pauses."""
    exchange_type: ExchangeType = Field(default=ExchangeType.DIRECT, alias="exchangeType")
    """The routing-key fork's exchange type of each topic: ``direct`` or ``topic``, with
    partitions as routing keys, or OMB's ``fanout`` (one partition only)."""
    topic_prefix: str = Field(default="test-topic", alias="topicPrefix", min_length=1)
    """The routing-key fork's prefix of the generated topic (exchange) names."""
    producers_per_connection: int = Field(default=1, alias="producersPerConnection", ge=1)
    """loadgen's: how many producers share one connection, each on a channel of its own; 1: a
    connection each."""
    consumers_per_connection: int = Field(default=1, alias="consumersPerConnection", ge=1)
    """loadgen's: how many consumers share one connection, and so its I/O thread; 1: a connection
    each."""
    confirms: bool = True
    """loadgen's: publish in confirm mode, a message's publisher confirm being its
    acknowledgement; false: a message counts as acknowledged once published."""
    max_in_flight: int = Field(default=1000, alias="maxInFlight", ge=1)
    """loadgen's: the most unconfirmed messages per producer (with ``confirms``); a send beyond
    it waits for a confirm."""
    mandatory: bool = True
    """loadgen's: publish with the ``mandatory`` flag, so a message no queue is bound for comes
    back and, with ``confirms``, counts as a send error."""
    prefetch: int = Field(default=1000, ge=0)
    """loadgen's: unacknowledged deliveries per consumer channel (``basic.qos`` prefetch count),
    the receiver-queue analogue; 0: unlimited."""
    auto_ack: bool = Field(default=False, alias="autoAck")
    """loadgen's: true, the broker counts a message acknowledged on delivery (OMB's mode); false:
    the consumer acks with ``multiple`` every ``prefetch``/2 messages and every 50 ms."""
    recovery_interval_ms: int = Field(default=1000, alias="recoveryIntervalMs", ge=0)
    """How often a dropped connection is reopened (the Java client's networkRecoveryInterval,
    5000 ms there); 0: never, a lost connection ends its producers and consumers."""
    tls: TlsSettings = Field(default_factory=TlsSettings)
    """loadgen's: TLS settings for every ``amqps://`` URI (a URI's own query keys win)."""

    @field_validator("queue_type", "exchange_type", mode="before")
    @classmethod
    def _any_case(cls, value: object, info: ValidationInfo) -> object:
        """Accept ``quorum`` and ``DIRECT`` (the routing-key fork's spelling); report the
        value as written when it is no member in any case."""
        enum = QueueType if info.field_name == "queue_type" else ExchangeType
        if isinstance(value, str):
            for member in enum:
                if member.value.lower() == value.lower():
                    return member
        return value

    @model_validator(mode="after")
    def _stream_needs_acks(self) -> RabbitMqConfig:
        if self.queue_type is QueueType.STREAM and (self.auto_ack or self.prefetch == 0):
            raise ValueError(
                "queueType STREAM needs manual acks and a prefetch: set autoAck: false and "
                "prefetch > 0"
            )
        return self


def check_uris(config: RabbitMqConfig, source: str | None) -> None:
    """Every ``amqpUris`` entry must parse, and an ``amqps`` one's CA, certificate and key
    files must load; errors show the URI with its password masked."""
    for index, uri in enumerate(config.amqp_uris):
        problem = None
        if urlsplit(uri).scheme not in ("amqp", "amqps"):
            problem = "not an amqp:// or amqps:// URI"
        else:
            try:
                connection_parameters(uri, 1.0, config.tls)
            except ValidationError as error:
                problem = "; ".join(
                    f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors()
                )
            except (OSError, ssl.SSLError) as error:
                problem = f"TLS files: {error}"
            except Exception as error:
                problem = str(error)
        if problem:
            raise ConfigError(
                f"{mask_password(uri)!r}: {problem}",
                file=source,
                path=f"amqpUris[{index}]",
                value=mask_password(uri),
                allowed="amqp://user:password@host:port/vhost, or amqps://...?cacertfile=F"
                "&certfile=F&keyfile=F&verify=verify_peer|verify_none"
                "&server_name_indication=HOST|disable",
            )


def mask_password(uri: str) -> str:
    """``uri`` with the password replaced by ``***``, for logs and error messages."""
    parts = urlsplit(uri)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at or ":" not in userinfo:
        return uri
    user = userinfo.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def connection_parameters(
    uri: str, timeout_s: float, tls: TlsSettings | None = None
) -> pika.URLParameters:
    """Parameters for ``uri`` that give up after ``timeout_s`` instead of retrying; an
    ``amqps`` URI gets a TLS context from its query keys over ``tls``."""
    import pika  # here, not at the top: the model above is read without the client (the docs)

    parameters = pika.URLParameters(split_tls_query(uri)[0])
    settings = settings_for(uri, tls or TlsSettings())
    if settings is not None:
        parameters.ssl_options = ssl_options(parameters.host, settings)
    parameters.connection_attempts = 1
    parameters.socket_timeout = timeout_s
    parameters.stack_timeout = timeout_s
    parameters.blocked_connection_timeout = None
    return parameters
