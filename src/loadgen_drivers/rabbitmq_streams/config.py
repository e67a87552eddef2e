"""The RabbitMQ Streams driver file: where the nodes are, how topics become streams, how
producers batch and confirm, how long streams keep data, how consumers read.

OMB has no RabbitMQ Streams driver, so the names follow RabbitMQ's own stream clients (the Java
client's ``maxUnconfirmedMessages``, ``subEntrySize``, ``compression``; the stream arguments
``max-length-bytes`` and ``stream-max-segment-size-bytes``) in OMB's camelCase. Everything is
checked before anything connects.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from loadgen.base.errors import ConfigError
from loadgen.driver_api.tls_block import TlsBlock

SCHEMES = {"rabbitmq-stream": 5552, "rabbitmq-stream+tls": 5551}
"""The URI schemes RabbitMQ's stream clients take, and their default ports."""


class Compression(StrEnum):
    """Codecs rstream implements for sub-entries."""

    NONE = "none"
    GZIP = "gzip"


class StreamsConfig(BaseModel):
    """The broker section of a RabbitMQ Streams driver file."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    uris: list[str] = Field(min_length=1)
    """Stream-protocol URIs, ``rabbitmq-stream://user:password@host:5552/vhost`` (the vhost
    percent-encoded: ``%2F`` for ``/``, the default) or ``rabbitmq-stream+tls://...:5551``; a
    topic's streams are created through the one CRC-32 of its name picks, and every client
    connects to its stream's leader as the node advertises it."""
    super_stream: bool = Field(default=False, alias="superStream")
    """true: a topic is one super stream whose partitions are the streams ``<topic>-<i>``
    (created and deleted with the stream protocol's super-stream commands: RabbitMQ 3.13 or
    later; one that exists is used as it is); false: N plain streams ``<topic>-<i>``, any
    RabbitMQ with the stream plugin. loadgen routes by key (CRC-32) either way."""
    sub_entry_size: int = Field(default=1, alias="subEntrySize", ge=1, le=65535)
    """Messages per sub-entry (the Java client's ``subEntrySize``): more than 1 packs that many
    into one entry, confirmed together; 1: one entry per message."""
    compression: Compression = Compression.NONE
    """The sub-entries' codec (with ``subEntrySize`` > 1): ``none`` or ``gzip``."""
    max_unconfirmed: int = Field(default=10_000, alias="maxUnconfirmedMessages", ge=1)
    """Messages awaiting a publisher confirm per producer (the Java client's
    ``maxUnconfirmedMessages``); a send beyond it waits for confirms."""
    max_length_bytes: int = Field(default=2_000_000_000, alias="maxLengthBytes", ge=0)
    """Each stream's retention (``max-length-bytes``): the oldest segments go beyond it, so a
    long run cannot fill the disk; 0: no limit."""
    max_segment_size_bytes: int = Field(
        default=100_000_000, alias="maxSegmentSizeBytes", ge=0, le=3_000_000_000
    )
    """Segment file size (``stream-max-segment-size-bytes``): retention removes whole segments;
    0: RabbitMQ's default (500 MB)."""
    consumer_credit: int = Field(default=10, alias="consumerCredit", ge=1, le=65535)
    """Chunks a subscription may have in flight (the subscribe command's credit); one more is
    granted per chunk received."""
    offset_store_interval_ms: int = Field(default=1000, alias="offsetStoreIntervalMs", ge=1)
    """How often a consumer stores its offset on the server under its subscription's name."""
    topic_prefix: str = Field(default="test-topic", alias="topicPrefix", min_length=1)
    """The prefix of generated topic names."""
    tls: TlsBlock = Field(default_factory=TlsBlock)
    """TLS settings for ``rabbitmq-stream+tls://`` URIs."""

    @field_validator("compression", mode="before")
    @classmethod
    def _any_case(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value


@dataclass(frozen=True)
class Endpoint:
    """One URI, parsed: what a connection is opened with."""

    host: str
    port: int
    vhost: str
    username: str
    password: str = ""
    tls: bool = False

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def shown(self) -> str:
        """The URI without its password, for messages."""
        scheme = "rabbitmq-stream+tls" if self.tls else "rabbitmq-stream"
        return f"{scheme}://{self.username}@{self.address}"


def endpoint(uri: str) -> Endpoint:
    """``uri`` parsed; ``ValueError`` saying what is wrong (never with the password)."""
    parts = urlsplit(uri)
    if parts.scheme not in SCHEMES:
        raise ValueError(f"the scheme must be one of {', '.join(SCHEMES)}")
    if not parts.hostname:
        raise ValueError("no host")
    try:
        port = parts.port or SCHEMES[parts.scheme]
    except ValueError:
        raise ValueError("the port is not a number from 1 to 65535") from None
    vhost = unquote(parts.path[1:]) if len(parts.path) > 1 else "/"
    return Endpoint(
        host=parts.hostname,
        port=port,
        vhost=vhost,
        username=unquote(parts.username or "guest"),
        password=unquote(parts.password or "guest"),
        tls=parts.scheme.endswith("+tls"),
    )


def mask_password(uri: str) -> str:
    """``uri`` with the password replaced by ``***``, for messages."""
    parts = urlsplit(uri)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at or ":" not in userinfo:
        return uri
    return urlunsplit(parts._replace(netloc=f"{userinfo.split(':', 1)[0]}:***@{host}"))


def check_uris(config: StreamsConfig, source: str | None) -> list[Endpoint]:
    """Every URI parsed, and for a TLS one the ``tls`` files loaded; :class:`ConfigError`
    naming the first that is wrong."""
    endpoints = []
    for index, uri in enumerate(config.uris):
        try:
            parsed = endpoint(uri)
            if parsed.tls:
                config.tls.context()
        except (ValueError, OSError, ssl.SSLError) as error:
            raise ConfigError(
                f"{mask_password(uri)!r}: {error}",
                file=source,
                path=f"uris[{index}]",
                value=mask_password(uri),
                allowed="rabbitmq-stream://user:password@host:5552/vhost or "
                "rabbitmq-stream+tls://user:password@host:5551/vhost (with a tls block's caFile)",
            ) from None
        endpoints.append(parsed)
    return endpoints


def stream_arguments(config: StreamsConfig) -> dict[str, int]:
    """The create-stream arguments of every stream a topic has."""
    arguments = {}
    if config.max_length_bytes:
        arguments["max-length-bytes"] = config.max_length_bytes
    if config.max_segment_size_bytes:
        arguments["stream-max-segment-size-bytes"] = config.max_segment_size_bytes
    return arguments
