"""The NATS driver file: OMB's fields and loadgen's own.

OMB's ``NatsConfig`` reads ``natsHostUrl`` (jnats' server list: comma-separated, with or
without ``nats://``), ``replicationFactor``, ``storageType`` (``File``/``Memory``) and
``maxBytes`` (-1: unlimited). The rest is loadgen's: the async publish window, the pull batch,
message-id dedup, credentials and TLS. Everything is checked before anything connects.
"""

from __future__ import annotations

from enum import StrEnum
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

DEFAULT_PORT = 4222


class StorageType(StrEnum):
    FILE = "File"
    MEMORY = "Memory"


class TlsSettings(BaseModel):
    """A driver file's ``tls`` block, in nats-server's own names (``ca_file``, ``cert_file``,
    ``key_file``); present, every server is reached over TLS."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ca_file: str | None = None
    """CA bundle the server's certificate must chain to; the system's CAs when unset."""
    cert_file: str | None = None
    """Client certificate (PEM), for a server that verifies clients; unset: none."""
    key_file: str | None = None
    """The client certificate's private key (PEM); unset: read from ``cert_file``."""
    verify_hostname: bool = True
    """Check that the certificate names the host the URL names."""


class NatsConfig(BaseModel):
    """The broker section of a NATS JetStream driver file."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    nats_host_url: str = Field(alias="natsHostUrl", min_length=1)
    """OMB's server list: ``host:port`` or ``nats://[user:password@]host:port``, several
    comma-separated (``tls://`` asks for TLS); port 4222 when none is given."""
    replication_factor: int = Field(default=1, alias="replicationFactor", ge=0, le=5)
    """OMB's stream replicas (0: the server's default, 1). On a server that is not part of a
    cluster a stream has one replica whatever this says (logged once)."""
    storage_type: StorageType = Field(default=StorageType.FILE, alias="storageType")
    """OMB's stream storage: ``File`` or ``Memory``."""
    max_bytes: int = Field(default=-1, alias="maxBytes", ge=-1)
    """OMB's stream size limit in bytes (old messages are discarded beyond it); -1: none."""
    max_pending: int = Field(default=4000, alias="maxPending", ge=1)
    """loadgen's: the most unacknowledged async publishes per producer (nats-py's
    ``publish_async_max_pending`` default); a send beyond it waits for a PubAck."""
    pull_batch: int = Field(default=500, alias="pullBatch", ge=1)
    """loadgen's: messages one pull request asks for; each full batch is acknowledged with one
    ack (``AckPolicy.ALL``)."""
    pull_expires_ms: int = Field(default=1000, alias="pullExpiresMs", ge=10)
    """loadgen's: how long a pull request waits for its batch; its partial batch is then acked."""
    max_ack_pending: int = Field(default=20000, alias="maxAckPending", ge=1)
    """loadgen's: the durable consumer's ``max_ack_pending`` (delivered, not yet acknowledged)."""
    msg_id_dedup: bool = Field(default=False, alias="msgIdDedup")
    """loadgen's: send each message's id as ``Nats-Msg-Id``, so the stream drops a message
    published twice within its duplicate window. Off by default: loadgen never republishes,
    and the header costs the server a lookup and the client a header per message."""
    user: str | None = None
    """loadgen's: user name for a server with ``authorization`` (or in the URL)."""
    password: str | None = None
    """loadgen's: that user's password."""
    token: str | None = None
    """loadgen's: an authorization token, instead of a user and password."""
    tls: TlsSettings | None = None
    """loadgen's: TLS settings; present (or a ``tls://`` URL), every server is reached over TLS."""

    @field_validator("storage_type", mode="before")
    @classmethod
    def _any_case(cls, value: object) -> object:
        """Accept ``file``, ``FILE`` (jnats' enum spelling) as well as OMB's ``File``."""
        if isinstance(value, str):
            for member in StorageType:
                if member.value.lower() == value.lower():
                    return member
        return value

    @field_validator("nats_host_url")
    @classmethod
    def _servers_parse(cls, value: str) -> str:
        for entry in value.split(","):
            server_urls(entry)
        return value

    @property
    def servers(self) -> list[str]:
        """``natsHostUrl`` as the URLs nats-py connects to."""
        return [url for entry in self.nats_host_url.split(",") for url in server_urls(entry)]

    @property
    def wants_tls(self) -> bool:
        return self.tls is not None or any(u.startswith("tls://") for u in self.servers)


def server_urls(entry: str) -> list[str]:
    """One ``natsHostUrl`` entry as a full URL (``nats://`` added, port 4222 when none);
    ``ValueError`` naming what is wrong."""
    text = entry.strip()
    if not text:
        return []
    url = text if "://" in text else f"nats://{text}"
    parts = urlsplit(url)
    if parts.scheme not in ("nats", "tls"):
        raise ValueError(f"{text!r}: the scheme must be nats:// or tls://")
    if not parts.hostname:
        raise ValueError(f"{text!r}: no host")
    port = parts.port  # ValueError for a port that is no number
    if port is None:
        parts = parts._replace(netloc=f"{parts.netloc}:{DEFAULT_PORT}")
    return [urlunsplit(parts)]


def mask_password(url: str) -> str:
    """``url`` with its password (or a token in the user part) replaced by ``***``."""
    parts = urlsplit(url if "://" in url else f"nats://{url}")
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url
    user = userinfo.split(":", 1)[0] if ":" in userinfo else "***"
    shown = f"{user}:***" if ":" in userinfo else user
    return urlunsplit(parts._replace(netloc=f"{shown}@{host}"))
