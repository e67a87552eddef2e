"""OMB's Pravega driver YAML (``PravegaConfig``), read for the ``pravega`` Python client.

Defaults are OMB's. Each field and what it becomes in the Python client (``pravega_client``
0.3.8, the Rust client through PyO3):

===============================================  ================================================
``client.controllerURI``                         ``StreamManager(uri)``; ``tcp://`` or ``tls://``
                                                 (unverified; CA certificates where the
                                                 ``pravega_client_tls_cert_path`` environment
                                                 variable says), one host:port
``client.scopeName`` (examples, ours)            the scope of every stream (OMB: no default)
``client.timeoutSeconds`` (30, loadgen's)        deadline of each control-plane call (scope,
                                                 stream, reader group); see :mod:`.control`
``writer.enableConnectionPooling`` (false)       no setting: the Rust client gives every segment
                                                 writer a connection of its own (Java's
                                                 ``false``); ``true`` is warned about
``includeTimestampInEvent`` (true)               the 24-byte stamp (send time, message id,
                                                 intended time; OMB: an 8-byte send time in ms)
                                                 before the payload; ``false``: no end-to-end
                                                 latency and no ids (warned)
``enableTransaction`` (false)                    ``create_transaction_writer`` instead of
                                                 ``create_writer``
``eventsPerTransaction`` (1)                     events per ``begin_txn`` … ``commit`` (with
                                                 ``enableTransaction`` only; else warned)
``eventPerTransaction``                          OMB's shipped misspelling (OMB ignores it):
                                                 read as ``eventsPerTransaction``, warned
``enableStreamAutoScaling`` (false)              ``StreamScalingPolicy.auto_scaling_policy_by_*``
                                                 (scale factor 2, min segments = partitions);
                                                 else ``fixed_scaling_policy(partitions)``
``eventsPerSecond`` (-1 = unset)                 ``auto_scaling_policy_by_event_rate`` target
``kbytesPerSecond`` (-1 = unset)                 ``auto_scaling_policy_by_data_rate`` target,
                                                 used when ``eventsPerSecond`` is unset (OMB)
``createScope`` (true)                           ``create_scope`` before the first stream;
                                                 ``false``: the scope must exist
``deleteStreams`` (true)                         at teardown every stream is sealed (always, as
                                                 OMB), then deleted with its reader groups
===============================================  ================================================

A field set to a value that cannot take effect (pooling on, rates without auto-scaling, a
transaction size without transactions...), the misspelling, and a file without timestamps are
warned about once when the driver is created (:func:`caveats`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from loadgen.base.errors import ConfigError

log = logging.getLogger("loadgen.pravega")

UNSET_RATE = -1
"""OMB's ``DEFAULT_STREAM_AUTOSCALING_VALUE``: no auto-scaling target."""
JAVA_INT_MAX = 2**31 - 1
CONTROLLER_SCHEMES = ("tcp", "tls")
SCALE_FACTOR = 2
"""OMB's ``ScalingPolicy.byEventRate(rate, 2, partitions)``: a hot segment splits in two."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class ClientConfig(_Section):
    controller_uri: str = Field(alias="controllerURI")
    """The controller's ``tcp://host:port`` or ``tls://host:port``, one address, given to
    ``StreamManager``; ``tls://`` takes its CA certificates where the
    ``pravega_client_tls_cert_path`` environment variable says."""
    scope_name: str = Field(default="examples", alias="scopeName", min_length=1)
    """The scope every stream is made in; ``examples`` by default, loadgen's (OMB has none)."""
    timeout_s: float = Field(default=30.0, alias="timeoutSeconds", gt=0)
    """loadgen's deadline of each control-plane call (scope, stream, reader group) and
    transaction, in s; the child process making it is killed then."""

    @field_validator("controller_uri")
    @classmethod
    def _controller_uri(cls, value: str) -> str:
        parts = urlsplit(value)
        try:
            port = parts.port
        except ValueError:
            port = None
        if parts.scheme not in CONTROLLER_SCHEMES or not parts.hostname or port is None:
            raise ValueError(f"{value!r} is not a tcp://host:port or tls://host:port URI")
        return value


class WriterConfig(_Section):
    enable_connection_pooling: bool = Field(default=False, alias="enableConnectionPooling")
    """OMB's writer connection pooling; the Python client has no such setting (each segment
    writer has a connection of its own, Java's ``false``), so ``true`` is warned about."""


class PravegaConfig(_Section):
    """The broker section of a Pravega driver file (OMB's ``PravegaConfig``)."""

    client: ClientConfig
    """OMB's ``client`` section: controller, scope and control-plane deadline."""
    writer: WriterConfig = Field(default_factory=WriterConfig)
    """OMB's ``writer`` section."""
    include_timestamp_in_event: bool = Field(default=True, alias="includeTimestampInEvent")
    """OMB's: prefix each event with loadgen's 24-byte stamp (send time in epoch ns, message id,
    intended send time); false sends the payload alone, so no end-to-end latency is recorded
    (warned)."""
    enable_transaction: bool = Field(default=False, alias="enableTransaction")
    """OMB's: write through transactions of ``eventsPerTransaction`` events
    (``create_transaction_writer``); an event is acknowledged when its transaction commits."""
    events_per_transaction: int = Field(
        default=1, alias="eventsPerTransaction", ge=1, le=JAVA_INT_MAX
    )
    """OMB's number of events per transaction; read with ``enableTransaction`` only (else warned
    about)."""
    event_per_transaction: int | None = Field(
        default=None, alias="eventPerTransaction", ge=1, le=JAVA_INT_MAX
    )
    """OMB's shipped misspelling of ``eventsPerTransaction``, which OMB ignores; read as
    ``eventsPerTransaction`` with a warning, and must agree with it when both are given."""
    enable_stream_auto_scaling: bool = Field(default=False, alias="enableStreamAutoScaling")
    """OMB's: give each stream an auto-scaling policy by ``eventsPerSecond``, else
    ``kbytesPerSecond`` (scale factor 2, at least ``partitionsPerTopic`` segments); false, or
    neither set: ``partitionsPerTopic`` fixed segments."""
    events_per_second: int = Field(default=UNSET_RATE, alias="eventsPerSecond", le=JAVA_INT_MAX)
    """OMB's auto-scaling target, in events/s per segment
    (``auto_scaling_policy_by_event_rate``); -1: unset. Read with ``enableStreamAutoScaling``
    only."""
    kbytes_per_second: int = Field(default=UNSET_RATE, alias="kbytesPerSecond", le=JAVA_INT_MAX)
    """OMB's auto-scaling target, in KiB/s per segment (``auto_scaling_policy_by_data_rate``),
    used when ``eventsPerSecond`` is unset; -1: unset."""
    create_scope: bool = Field(default=True, alias="createScope")
    """OMB's: create the scope before the first stream (and delete it at the end when this run
    made it and ``deleteStreams`` is true); false: the scope must exist."""
    delete_streams: bool = Field(default=True, alias="deleteStreams")
    """OMB's: after the run, seal every stream and delete it with its reader groups; false:
    streams are sealed and kept."""

    @field_validator("events_per_second", "kbytes_per_second")
    @classmethod
    def _rate(cls, value: int) -> int:
        if value != UNSET_RATE and value < 1:
            raise ValueError(f"a scaling target must be -1 (unset) or at least 1, not {value}")
        return value

    @model_validator(mode="after")
    def _one_transaction_size(self) -> PravegaConfig:
        misspelt = self.event_per_transaction
        given = "events_per_transaction" in self.model_fields_set
        if misspelt is not None and given and misspelt != self.events_per_transaction:
            raise ConfigError(
                "eventPerTransaction (OMB's misspelling) disagrees with eventsPerTransaction",
                path="eventPerTransaction",
                value=misspelt,
                allowed=[str(self.events_per_transaction)],
            )
        return self

    @property
    def transaction_size(self) -> int:
        return self.event_per_transaction or self.events_per_transaction

    def scaling(self, partitions: int) -> Scaling:
        """The stream's scaling policy for a topic of ``partitions`` (OMB's choice)."""
        if self.enable_stream_auto_scaling:
            if self.events_per_second != UNSET_RATE:
                return Scaling("events", self.events_per_second, partitions)
            if self.kbytes_per_second != UNSET_RATE:
                return Scaling("kbytes", self.kbytes_per_second, partitions)
        return Scaling("fixed", 0, partitions)


@dataclass(frozen=True)
class Scaling:
    """A stream scaling policy as plain values (the client's policy object does not pickle)."""

    kind: str
    """``fixed``, ``events`` (events/s per segment) or ``kbytes`` (KiB/s per segment)."""
    target_rate: int
    min_segments: int


def caveats(config: PravegaConfig) -> list[str]:
    """What the file asks for that does not happen as a reader of OMB's file would expect."""
    given = config.model_fields_set
    reasons = []
    if config.writer.enable_connection_pooling:
        reasons.append(
            "writer.enableConnectionPooling: true is not applied: the Python client has no "
            "such setting and gives every segment writer a connection of its own"
        )
    rates = [
        name
        for name, value in (
            ("eventsPerSecond", config.events_per_second),
            ("kbytesPerSecond", config.kbytes_per_second),
        )
        if value != UNSET_RATE
    ]
    if rates and not config.enable_stream_auto_scaling:
        verb = "are" if len(rates) > 1 else "is"
        reasons.append(
            f"{' and '.join(rates)} {verb} not applied: streams get a fixed segment count "
            "unless enableStreamAutoScaling is true"
        )
    elif len(rates) == 2:
        reasons.append("kbytesPerSecond is not applied: eventsPerSecond takes precedence (OMB)")
    elif config.enable_stream_auto_scaling and not rates:
        reasons.append(
            "enableStreamAutoScaling: true is not applied without eventsPerSecond or "
            "kbytesPerSecond: streams get a fixed segment count"
        )
    sizes = {"events_per_transaction", "event_per_transaction"} & given
    if sizes and not config.enable_transaction:
        reasons.append("eventsPerTransaction is not applied: enableTransaction is false")
    if config.event_per_transaction is not None:
        reasons.append(
            "eventPerTransaction (OMB's shipped misspelling, which OMB ignores) is read as "
            f"eventsPerTransaction = {config.event_per_transaction}"
        )
    if not config.include_timestamp_in_event:
        reasons.append(
            "includeTimestampInEvent: false: events carry no send time, so no end-to-end "
            "latency is recorded (received events are counted, without a latency)"
        )
    return reasons


def warn_caveats(config: PravegaConfig, source: str | None) -> None:
    for reason in caveats(config):
        log.warning("%s: %s", source or "<config>", reason)
