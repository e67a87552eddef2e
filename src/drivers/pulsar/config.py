"""OMB's Pulsar driver YAML (``client``, ``producer``, ``consumer``), read for pulsar-client.

Defaults are OMB's (its ``Pulsar*Config`` classes and hard-coded values), else Apache Pulsar's
client defaults; never a test broker's. Each field and the pulsar-client argument it becomes:

================================================  ===============================================
``client.serviceUrl``                             ``Client(service_url)``; ``pulsar+ssl://`` = TLS
``client.httpUrl``                                admin REST base (tenant, namespace, topics)
``client.ioThreads`` (8)                          ``io_threads``
``client.listenerThreads`` (1, loadgen's)         ``message_listener_threads`` (OMB: #CPUs)
``client.maxConcurrentLookupRequests`` (1000)     ``concurrent_lookup_requests``
``client.operationTimeoutSeconds`` (30, ours)     ``operation_timeout_seconds`` (OMB: 600)
``client.connectionsPerBroker`` (8)               not settable: warning, client uses 1
``client.clientMemoryLimitMB`` (256)              not settable: warning, no memory limit
``client.namespacePrefix`` (benchmark/ns)         namespace ``<prefix>-<rand7>``, tenant before /
``client.clusterName``                            tenant's allowed cluster (REST)
``client.topicType`` (persistent)                 topic domain: persistent / non-persistent
``client.persistence.*`` (3/3/2, dedup off)       namespace policies (REST); warning without it
``client.tlsTrustCertsFilePath``                  ``tls_trust_certs_file_path`` (+ REST CA)
``client.tlsAllowInsecureConnection`` (false)     ``tls_allow_insecure_connection`` (+ REST)
``client.tlsEnableHostnameVerification`` (false)  ``tls_validate_hostname`` (+ REST)
``client.authentication.plugin`` / ``.data``      ``Authentication(plugin, data)``; REST: token
``producer.batchingEnabled`` (true)               ``batching_enabled``
``producer.batchingMaxPublishDelayMs`` (1)        ``batching_max_publish_delay_ms``
``producer.batchingMaxBytes`` (1048576)           ``batching_max_allowed_size_in_bytes``
``producer.batchingMaxMessages`` (2^31-1)         ``batching_max_messages`` (OMB hard-codes)
``producer.batchingType`` (default)               ``batching_type``: Default / KeyBased
``producer.batchingPartitionSwitchFrequency…``    unset: the C++ round-robin router (switches each
                                                  publish delay or full batch); N: a router with
                                                  the Java client's rule (switch every N delays)
``producer.blockIfQueueFull`` (true)              ``block_if_queue_full``
``producer.pendingQueueSize`` (0 = unbounded)     ``max_pending_messages``
``producer.maxPendingMessagesAcrossPartitions``   ``max_pending_messages_across_partitions``
``producer.sendTimeoutMs`` (0, OMB hard-codes)    ``send_timeout_millis``
``consumer.receiverQueueSize`` (10000)            ``receiver_queue_size``
``consumer.maxTotalReceiverQueueSize…`` (2^31-1)  ``max_total_receiver_queue_size_across_…``
``consumer.subscriptionType`` (Failover)          ``consumer_type`` (Key_Shared = KeyShared)
``consumer.ackMode`` (individual)                 ``acknowledge`` / ``acknowledge_cumulative``;
                                                  ``batch-index``: ``batch_index_ack_enabled``
``consumer.subscriptionInitialPosition`` (Latest) ``initial_position``
================================================  ===============================================

Empty strings in optional fields count as unset (OMB NPEs on them, its issue #104).
"""

from __future__ import annotations

import logging
from enum import StrEnum
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from loadgen.base.errors import ConfigError

log = logging.getLogger("loadgen.pulsar")

JAVA_INT_MAX = 2**31 - 1
SERVICE_SCHEMES = ("pulsar", "pulsar+ssl")
HTTP_SCHEMES = ("http", "https")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class TopicType(StrEnum):
    PERSISTENT = "persistent"
    NON_PERSISTENT = "non-persistent"


class SubscriptionType(StrEnum):
    EXCLUSIVE = "Exclusive"
    SHARED = "Shared"
    FAILOVER = "Failover"
    KEY_SHARED = "Key_Shared"


class AckMode(StrEnum):
    INDIVIDUAL = "individual"
    CUMULATIVE = "cumulative"
    BATCH_INDEX = "batch-index"


class BatchingType(StrEnum):
    DEFAULT = "default"
    KEY_BASED = "key-based"


def _blank_is_none(value: object) -> object:
    return None if value == "" else value


def _spelling(enum: type[StrEnum], value: object) -> object:
    """Any case, with or without ``_``/``-`` (OMB writes ``non_persistent``, Java
    ``KEY_BASED``, C++ ``KeyBased``)."""
    if isinstance(value, str):
        for member in enum:
            if _bare(member.value) == _bare(value):
                return member
    return value


def _bare(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


class Persistence(_Section):
    ensemble_size: int = Field(default=3, alias="ensembleSize", ge=1)
    write_quorum: int = Field(default=3, alias="writeQuorum", ge=1)
    ack_quorum: int = Field(default=2, alias="ackQuorum", ge=1)
    deduplication_enabled: bool = Field(default=False, alias="deduplicationEnabled")

    @model_validator(mode="after")
    def _quorums_fit(self) -> Persistence:
        if not self.ack_quorum <= self.write_quorum <= self.ensemble_size:
            raise ConfigError(
                "BookKeeper needs ackQuorum <= writeQuorum <= ensembleSize",
                path="client.persistence.ackQuorum",
                value=(self.ensemble_size, self.write_quorum, self.ack_quorum),
                allowed="ackQuorum <= writeQuorum <= ensembleSize",
            )
        return self


class Authentication(_Section):
    plugin: str | None = None
    data: str | None = None

    _blank = field_validator("plugin", "data", mode="before")(_blank_is_none)


class ClientConfig(_Section):
    service_url: str = Field(alias="serviceUrl")
    http_url: str | None = Field(default=None, alias="httpUrl")
    client_memory_limit_mb: int = Field(default=256, alias="clientMemoryLimitMB", ge=0)
    io_threads: int = Field(default=8, alias="ioThreads", ge=1)
    listener_threads: int = Field(default=1, alias="listenerThreads", ge=1)
    connections_per_broker: int = Field(default=8, alias="connectionsPerBroker", ge=1)
    max_concurrent_lookup_requests: int = Field(
        default=1000, alias="maxConcurrentLookupRequests", ge=1
    )
    operation_timeout_s: int = Field(default=30, alias="operationTimeoutSeconds", ge=1)
    namespace_prefix: str = Field(default="benchmark/ns", alias="namespacePrefix")
    cluster_name: str | None = Field(default=None, alias="clusterName")
    topic_type: TopicType = Field(default=TopicType.PERSISTENT, alias="topicType")
    persistence: Persistence = Field(default_factory=Persistence)
    tls_allow_insecure_connection: bool = Field(default=False, alias="tlsAllowInsecureConnection")
    tls_enable_hostname_verification: bool = Field(
        default=False, alias="tlsEnableHostnameVerification"
    )
    tls_trust_certs_file_path: str | None = Field(default=None, alias="tlsTrustCertsFilePath")
    authentication: Authentication = Field(default_factory=Authentication)

    _blank = field_validator(
        "http_url", "cluster_name", "tls_trust_certs_file_path", mode="before"
    )(_blank_is_none)

    @field_validator("topic_type", mode="before")
    @classmethod
    def _topic_type(cls, value: object) -> object:
        return _spelling(TopicType, value)

    @field_validator("service_url")
    @classmethod
    def _service_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in SERVICE_SCHEMES or not parts.netloc:
            raise ValueError(f"{value!r} is not a pulsar://host:port or pulsar+ssl:// URL")
        return value

    @field_validator("http_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None:
            parts = urlsplit(value)
            if parts.scheme not in HTTP_SCHEMES or not parts.netloc:
                raise ValueError(f"{value!r} is not an http:// or https:// URL")
        return value.rstrip("/") if value else value

    @field_validator("namespace_prefix")
    @classmethod
    def _namespace_prefix(cls, value: str) -> str:
        tenant, slash, namespace = value.partition("/")
        if not (tenant and slash and namespace) or "/" in namespace:
            raise ValueError(f"{value!r} is not tenant/namespace")
        return value


class ProducerConfig(_Section):
    batching_enabled: bool = Field(default=True, alias="batchingEnabled")
    batching_max_publish_delay_ms: int = Field(default=1, alias="batchingMaxPublishDelayMs", ge=0)
    batching_max_bytes: int = Field(default=1_048_576, alias="batchingMaxBytes", ge=1)
    batching_max_messages: int = Field(
        default=JAVA_INT_MAX, alias="batchingMaxMessages", ge=1, le=JAVA_INT_MAX
    )
    batching_type: BatchingType = Field(default=BatchingType.DEFAULT, alias="batchingType")
    batching_partition_switch_frequency: int | None = Field(
        default=None, alias="batchingPartitionSwitchFrequencyByPublishDelay", ge=1
    )
    block_if_queue_full: bool = Field(default=True, alias="blockIfQueueFull")
    pending_queue_size: int = Field(default=0, alias="pendingQueueSize", ge=0)
    max_pending_across_partitions: int = Field(
        default=50_000, alias="maxPendingMessagesAcrossPartitions", ge=1
    )
    send_timeout_ms: int = Field(default=0, alias="sendTimeoutMs", ge=0)

    @field_validator("batching_type", mode="before")
    @classmethod
    def _batching_type(cls, value: object) -> object:
        return _spelling(BatchingType, value)


class ConsumerConfig(_Section):
    receiver_queue_size: int = Field(default=10_000, alias="receiverQueueSize", ge=0)
    max_total_receiver_queue_size: int = Field(
        default=JAVA_INT_MAX, alias="maxTotalReceiverQueueSizeAcrossPartitions", ge=1
    )
    subscription_type: SubscriptionType = Field(
        default=SubscriptionType.FAILOVER, alias="subscriptionType"
    )
    ack_mode: AckMode = Field(default=AckMode.INDIVIDUAL, alias="ackMode")
    initial_position: Literal["Latest", "Earliest"] = Field(
        default="Latest", alias="subscriptionInitialPosition"
    )

    @field_validator("subscription_type", mode="before")
    @classmethod
    def _subscription_type(cls, value: object) -> object:
        """Java's enum constant is ``Key_Shared``; ``KeyShared`` (the C++ name) is accepted."""
        return "Key_Shared" if value == "KeyShared" else value

    @field_validator("ack_mode", mode="before")
    @classmethod
    def _ack_mode(cls, value: object) -> object:
        return _spelling(AckMode, value)

    @model_validator(mode="after")
    def _cumulative_needs_one_reader(self) -> ConsumerConfig:
        shared = (SubscriptionType.SHARED, SubscriptionType.KEY_SHARED)
        if self.ack_mode is AckMode.CUMULATIVE and self.subscription_type in shared:
            raise ConfigError(
                f"Pulsar refuses cumulative acks on {self.subscription_type.value} subscriptions",
                path="consumer.ackMode",
                value=self.ack_mode.value,
                allowed=["individual", "batch-index"],
            )
        return self


class PulsarConfig(_Section):
    """The broker section of a Pulsar driver file (OMB's ``PulsarConfig``)."""

    client: ClientConfig
    producer: ProducerConfig = Field(default_factory=ProducerConfig)
    consumer: ConsumerConfig = Field(default_factory=ConsumerConfig)


NOT_SETTABLE = {
    "connections_per_broker": "the Python client has no connectionsPerBroker; it opens 1",
    "client_memory_limit_mb": "the Python client has no memory limit setting",
}


def warn_unexpressible(config: PulsarConfig, source: str | None) -> None:
    """One warning per field the file sets that pulsar-client cannot apply."""
    client = config.client
    for name, why in NOT_SETTABLE.items():
        if name in client.model_fields_set:
            alias = ClientConfig.model_fields[name].alias
            log.warning("%s: client.%s is not applied: %s", source or "<config>", alias, why)
