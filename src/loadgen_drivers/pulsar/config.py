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
    """BookKeeper ensemble size of the namespace: the bookies each ledger is spread over."""
    write_quorum: int = Field(default=3, alias="writeQuorum", ge=1)
    """BookKeeper write quorum of the namespace: the copies written of each entry."""
    ack_quorum: int = Field(default=2, alias="ackQuorum", ge=1)
    """BookKeeper ack quorum of the namespace: the copies that must acknowledge an entry before
    its write succeeds; at most ``writeQuorum``, itself at most ``ensembleSize``."""
    deduplication_enabled: bool = Field(default=False, alias="deduplicationEnabled")
    """The namespace's message deduplication policy; off by default."""

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
    """The authentication plugin's class name (Java's, e.g.
    ``org.apache.pulsar.client.impl.auth.AuthenticationToken``), given to
    ``Authentication(plugin, data)``; unset: no authentication."""
    data: str | None = None
    """The plugin's parameter string: ``token:XYZ`` or ``file:PATH`` for a token, a JSON object
    for basic authentication; token and basic credentials go to the admin REST API too. Redacted
    in output."""

    _blank = field_validator("plugin", "data", mode="before")(_blank_is_none)


class ClientConfig(_Section):
    service_url: str = Field(alias="serviceUrl")
    """The broker's ``pulsar://host:port`` URL (``pulsar+ssl://`` for TLS; several hosts
    separated by commas), given to ``Client(service_url)``."""
    http_url: str | None = Field(default=None, alias="httpUrl")
    """The admin REST API's ``http(s)://`` base URL, for the tenant, namespace, partitioned
    topics and their deletion; unset or not answering: the broker auto-creates topics with its
    own partition count."""
    client_memory_limit_mb: int = Field(default=256, alias="clientMemoryLimitMB", ge=0)
    """OMB's client memory limit, in MB; the Python client cannot set it, so a value given is
    warned about and not applied."""
    io_threads: int = Field(default=8, alias="ioThreads", ge=1)
    """Threads for the client's network I/O (``io_threads``)."""
    listener_threads: int = Field(default=1, alias="listenerThreads", ge=1)
    """Threads that run the consumers' message listeners, shared by a worker's consumers
    (``message_listener_threads``); 1 by default, loadgen's (OMB: the CPU count)."""
    connections_per_broker: int = Field(default=8, alias="connectionsPerBroker", ge=1)
    """OMB's connections per broker; the Python client cannot set it (it opens 1), so a value
    given is warned about and not applied."""
    max_concurrent_lookup_requests: int = Field(
        default=1000, alias="maxConcurrentLookupRequests", ge=1
    )
    """Topic lookups the client makes at once (``concurrent_lookup_requests``)."""
    operation_timeout_s: int = Field(default=30, alias="operationTimeoutSeconds", ge=1)
    """Timeout of the client's operations (lookups, creating producers and consumers), in s
    (``operation_timeout_seconds``); 30 by default, loadgen's (OMB: 600)."""
    namespace_prefix: str = Field(default="benchmark/ns", alias="namespacePrefix")
    """``tenant/namespace`` prefix of the run's namespace, ``<prefix>-<7 random characters>``, in
    which the topics are made."""
    cluster_name: str | None = Field(default=None, alias="clusterName")
    """The cluster the tenant is allowed on (admin REST); unset: every cluster the admin API
    lists."""
    topic_type: TopicType = Field(default=TopicType.PERSISTENT, alias="topicType")
    """The topics' domain: ``persistent`` or ``non-persistent``."""
    persistence: Persistence = Field(default_factory=Persistence)
    """OMB's namespace policies, set through the admin REST API; without it they are not applied
    (warned about)."""
    tls_allow_insecure_connection: bool = Field(default=False, alias="tlsAllowInsecureConnection")
    """Accept the broker's certificate without checking it (``tls_allow_insecure_connection``;
    the admin REST requests too)."""
    tls_enable_hostname_verification: bool = Field(
        default=False, alias="tlsEnableHostnameVerification"
    )
    """Check that the broker's certificate names its host (``tls_validate_hostname``; the admin
    REST requests too)."""
    tls_trust_certs_file_path: str | None = Field(default=None, alias="tlsTrustCertsFilePath")
    """CA certificates file for ``pulsar+ssl://`` (``tls_trust_certs_file_path``) and for
    ``https://`` admin requests; unset: each client's default."""
    authentication: Authentication = Field(default_factory=Authentication)
    """The client's authentication plugin and its data; unset: none."""

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
    """Group messages into batches (``batching_enabled``)."""
    batching_max_publish_delay_ms: int = Field(default=1, alias="batchingMaxPublishDelayMs", ge=0)
    """Longest a batch waits for more messages before it is sent, in ms
    (``batching_max_publish_delay_ms``)."""
    batching_max_bytes: int = Field(default=1_048_576, alias="batchingMaxBytes", ge=1)
    """Largest batch, in bytes (``batching_max_allowed_size_in_bytes``); 1 MiB by default."""
    batching_max_messages: int = Field(
        default=JAVA_INT_MAX, alias="batchingMaxMessages", ge=1, le=JAVA_INT_MAX
    )
    """Most messages in a batch (``batching_max_messages``); OMB hard-codes 2^31-1, in effect no
    limit."""
    batching_type: BatchingType = Field(default=BatchingType.DEFAULT, alias="batchingType")
    """``default``, or ``key-based`` to batch the messages of each key apart (``batching_type``)."""
    batching_partition_switch_frequency: int | None = Field(
        default=None, alias="batchingPartitionSwitchFrequencyByPublishDelay", ge=1
    )
    """With batching, a message without a key stays on one partition for N publish delays, then
    moves on (the Java client's rule, one Python call per message); unset: the C++ client's
    router, which moves at each publish delay or full batch."""
    block_if_queue_full: bool = Field(default=True, alias="blockIfQueueFull")
    """A send to a full pending queue waits for room (``block_if_queue_full``); false: it fails,
    counted as a publish error."""
    pending_queue_size: int = Field(default=0, alias="pendingQueueSize", ge=0)
    """Most messages awaiting acknowledgement in a producer (``max_pending_messages``); 0:
    unbounded, and ``maxPendingMessagesAcrossPartitions`` then bounds nothing either (a producer
    outrunning the broker held 860k messages, seconds of publish latency)."""
    max_pending_across_partitions: int = Field(
        default=50_000, alias="maxPendingMessagesAcrossPartitions", ge=1
    )
    """Most messages awaiting acknowledgement over all partitions of a partitioned topic
    (``max_pending_messages_across_partitions``)."""
    send_timeout_ms: int = Field(default=0, alias="sendTimeoutMs", ge=0)
    """Time after which an unacknowledged send fails, in ms (``send_timeout_millis``); 0, OMB's
    hard-coded value: never."""

    @field_validator("batching_type", mode="before")
    @classmethod
    def _batching_type(cls, value: object) -> object:
        return _spelling(BatchingType, value)


class ConsumerConfig(_Section):
    receiver_queue_size: int = Field(default=10_000, alias="receiverQueueSize", ge=0)
    """Messages the client prefetches per partition (``receiver_queue_size``)."""
    max_total_receiver_queue_size: int = Field(
        default=JAVA_INT_MAX, alias="maxTotalReceiverQueueSizeAcrossPartitions", ge=1
    )
    """Cap on the prefetched messages over all partitions of a topic
    (``max_total_receiver_queue_size_across_partitions``); 2^31-1, in effect none."""
    subscription_type: SubscriptionType = Field(
        default=SubscriptionType.FAILOVER, alias="subscriptionType"
    )
    """How a subscription's consumers share its messages (``consumer_type``): ``Exclusive``,
    ``Shared``, ``Failover`` or ``Key_Shared``."""
    ack_mode: AckMode = Field(default=AckMode.INDIVIDUAL, alias="ackMode")
    """``individual``: each message is acknowledged; ``cumulative``: everything up to it (refused
    on Shared and Key_Shared); ``batch-index``: individually, with ``batch_index_ack_enabled``."""
    initial_position: Literal["Latest", "Earliest"] = Field(
        default="Latest", alias="subscriptionInitialPosition"
    )
    """Where a new subscription starts (``initial_position``): ``Latest``, or ``Earliest`` to
    read what the topic already holds."""

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
    """OMB's ``client`` section: connection, TLS, authentication, admin REST and namespace."""
    producer: ProducerConfig = Field(default_factory=ProducerConfig)
    """OMB's ``producer`` section: batching and pending queues."""
    consumer: ConsumerConfig = Field(default_factory=ConsumerConfig)
    """OMB's ``consumer`` section: receiver queues, subscription type and acknowledgements."""


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
