"""OMB workload files: OMB's field names and defaults, plus the checks OMB never made.

Differences from OMB (all on purpose, all documented in the README): unknown keys and unknown
``keyDistributor`` values are errors (``--lenient`` restores ignoring unknown keys); a count,
size or duration whose OMB default (0) makes no sense must be given (``topics``,
``partitionsPerTopic``, ``messageSize``, ``testDurationMinutes`` — OMB's 0 means "run forever");
durations, ``producerRate`` and ``consumerBacklogSizeGB`` may be fractional; ``producerRate``
may be written ``10k`` and ``messageSize`` ``4KiB`` (:mod:`.units`; results hold the numbers).
One field is loadgen's own: ``producerRateProfile`` (steps and ramps of the rate,
:mod:`.rate_profile`); so are ``messageSizes`` / ``messageSizeRange`` (:mod:`.message_sizes`)
and ``consumerDelay`` (:mod:`.consumer_delay`), ``consumerChanges`` (:mod:`.consumer_changes`),
``faults`` (:mod:`.faults`) and ``backlogDrainTimeout``.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_serializer,
    field_validator,
    model_validator,
)

from loadgen.base.errors import ConfigError
from loadgen.spec.consumer_changes import ConsumerChange, check_changes, check_within
from loadgen.spec.consumer_delay import ConsumerDelay
from loadgen.spec.durations import parse_wait
from loadgen.spec.faults import Fault, check_faults_within
from loadgen.spec.loader import load_yaml
from loadgen.spec.message_sizes import (
    MAX_MESSAGE_SIZE,
    SizeRange,
    SizeWeight,
    check_distribution,
    raw_mean,
)
from loadgen.spec.model import parse_model
from loadgen.spec.rate_profile import RateSegment, parse_profile, profile_to_yaml
from loadgen.spec.units import parse_rate, parse_size

MAX_TOTAL_PARTITIONS = 10_000_000


class KeyDistributor(StrEnum):
    NO_KEY = "NO_KEY"
    KEY_ROUND_ROBIN = "KEY_ROUND_ROBIN"
    RANDOM_NANO = "RANDOM_NANO"


class Workload(BaseModel):
    """One OMB workload. Python names are snake_case; YAML keys are OMB's camelCase."""

    # validate_default: OMB's default 0 for topics, messageSize, testDurationMinutes... is refused
    model_config = ConfigDict(
        extra="forbid",
        populate_by_name=True,
        frozen=True,
        validate_default=True,
        allow_inf_nan=False,
    )

    name: str | None = None
    """OMB's workload name: the result's ``workload`` and the start of its file name; unset, the
    workload file's name without its extension."""
    topics: int = Field(default=0, ge=1)
    """OMB's number of topics the run creates; must be given (OMB's default 0 is refused)."""
    partitions_per_topic: int = Field(default=0, alias="partitionsPerTopic", ge=1)
    """OMB's number of partitions of each topic (RabbitMQ: routing keys and queues; Pravega:
    stream segments); must be given."""
    key_distributor: KeyDistributor = Field(default=KeyDistributor.NO_KEY, alias="keyDistributor")
    """OMB's message keys: ``NO_KEY`` (the default) sends none, ``KEY_ROUND_ROBIN`` cycles
    through a pool of 10,000 random keys, ``RANDOM_NANO`` picks one of them by the send time's
    nanoseconds."""
    message_size: int = Field(default=0, alias="messageSize", ge=1, le=MAX_MESSAGE_SIZE)
    """OMB's payload size of each message, in bytes (``4KiB`` accepted); must be given, except
    with ``messageSizes`` or ``messageSizeRange``, whose rounded mean it then is."""
    message_sizes: tuple[SizeWeight, ...] | None = Field(default=None, alias="messageSizes")
    """loadgen's extension: sizes with weights; ``messageSize`` is then their mean."""
    message_size_range: SizeRange | None = Field(default=None, alias="messageSizeRange")
    """loadgen's extension: sizes uniform in ``min..max``; ``messageSize`` is then the middle."""
    use_randomized_payloads: bool = Field(default=False, alias="useRandomizedPayloads")
    """OMB's: send payloads from a pool of ``randomizedPayloadPoolSize`` generated ones
    (``randomBytesRatio`` random bytes, then zeros) instead of ``payloadFile``; false without a
    ``payloadFile``: fully random payloads."""
    random_bytes_ratio: float = Field(default=0.0, alias="randomBytesRatio", ge=0, le=1)
    """OMB's share (0 to 1) of each generated payload that is random bytes, the rest zeros
    (compressible); read with ``useRandomizedPayloads`` only, where the default 0 gives all-zero
    payloads."""
    randomized_payload_pool_size: int = Field(default=0, alias="randomizedPayloadPoolSize", ge=0)
    """OMB's number of payloads generated for ``useRandomizedPayloads`` (then at least 1), which
    producers cycle through; a size-distribution pool has at least this many entries, and at
    least 1024."""
    payload_file: str | None = Field(default=None, alias="payloadFile")
    """OMB's file sent as every message's payload, exactly ``messageSize`` bytes long; a path
    relative to the working directory, else to the workload file's folder. Not read with
    ``useRandomizedPayloads``."""
    subscriptions_per_topic: int = Field(default=0, alias="subscriptionsPerTopic", ge=0)
    """OMB's number of subscriptions (consumer groups) on each topic, each receiving every
    message; 0: a producer-only run."""
    producers_per_topic: int = Field(default=0, alias="producersPerTopic", ge=0)
    """OMB's number of producers on each topic (``producerRate`` is their total); 0: a
    consumer-only run, which needs ``--existing-topics``."""
    consumer_per_subscription: int = Field(default=0, alias="consumerPerSubscription", ge=0)
    """OMB's number of consumers on each subscription, sharing its messages as the driver's
    subscription does (a Kafka group, Pulsar's ``subscriptionType``...)."""
    producer_rate: float = Field(default=0, alias="producerRate", ge=-1)
    """OMB's target publish rate in msg/s, all producers together (``10k`` accepted); 0 or -1
    (the default 0) without ``producerRateProfile``: OMB's search for the highest sustainable
    rate."""
    consumer_backlog_size_gb: float = Field(default=0, alias="consumerBacklogSizeGB", ge=0)
    """OMB's catch-up run: above 0, consumers pause until the subscriptions hold this many GiB
    (of ``messageSize`` messages), then drain it; fractions allowed. 0: no backlog phase."""
    backlog_drain_ratio: float = Field(default=1.0, alias="backlogDrainRatio", gt=0, le=1)
    """OMB's share of the backlog a catch-up drain must read: it ends once at most
    max(1000, (1 - ratio) × the target backlog) messages remain; 1, the default, drains to 1000."""
    backlog_drain_timeout_s: float | None = Field(default=None, alias="backlogDrainTimeout")
    """loadgen's extension: the longest a catch-up drain may take (``5m``; ``forever``, 0,
    waits as OMB does); unset, ``--catch-up-timeout``."""
    tailing_subscriptions_per_topic: int = Field(
        default=0, alias="tailingSubscriptionsPerTopic", ge=0
    )
    """loadgen's mixed runs: of ``subscriptionsPerTopic``, this many keep tailing while the
    others build and read the backlog (0: all of them catch up, OMB's catch-up run)."""
    consumer_delay: ConsumerDelay | None = Field(default=None, alias="consumerDelay")
    """loadgen's extension: each consumer sleeps this long per message after recording it."""
    producer_max_in_flight: int | None = Field(default=None, alias="producerMaxInFlight", ge=1)
    """loadgen's extension: at most this many unacknowledged messages per producer (1 =
    synchronous publishing, as pulsar-perf's sync mode); unset, the open loop is unbounded."""
    test_duration_minutes: float = Field(default=0, alias="testDurationMinutes", gt=0)
    """OMB's length of the measured phase, in minutes (fractions allowed; in a catch-up run, the
    steady state after the drain); must be given: OMB's 0 (run forever) is refused.
    ``--duration`` overrides it."""
    warmup_duration_minutes: float = Field(default=1, alias="warmupDurationMinutes", ge=0)
    """OMB's warm-up before measurement, in minutes (default 1): measured, flagged and left out
    of the aggregates. ``--warmup`` overrides it."""
    producer_rate_profile: tuple[RateSegment, ...] | None = Field(
        default=None, alias="producerRateProfile"
    )
    """loadgen's extension: steps and ramps for the measured phase (:mod:`.rate_profile`)."""
    faults: tuple[Fault, ...] = Field(default=(), alias="faults")
    """loadgen's extension: broker nodes killed, paused, stopped or restarted, or a user's
    command run, at given times of the measured phase (:mod:`.faults`)."""
    consumer_changes: tuple[ConsumerChange, ...] = Field(default=(), alias="consumerChanges")
    """loadgen's extension: consumers joining or leaving every subscription during the measured
    phase (:mod:`.consumer_changes`)."""

    @model_validator(mode="before")
    @classmethod
    def _mean_size(cls, data: Any) -> Any:
        """With a size distribution, a missing ``messageSize`` is its mean (rounded). A bad
        distribution gets a placeholder, so the error reported is the distribution's own."""
        if not isinstance(data, dict) or "messageSize" in data or "message_size" in data:
            return data
        if not {"messageSizes", "message_sizes", "messageSizeRange", "message_size_range"} & set(
            data
        ):
            return data
        mean = raw_mean(data)
        return {**data, "messageSize": 1 if mean is None else mean}

    @field_validator("producer_rate", mode="before")
    @classmethod
    def _rate_text(cls, value: Any) -> Any:
        """``10k`` as a rate; numbers (OMB's 0 and -1 too) go on to the field's own checks."""
        return parse_rate(value, "producerRate") if isinstance(value, str) else value

    @field_validator("backlog_drain_timeout_s", mode="before")
    @classmethod
    def _wait_text(cls, value: Any) -> Any:
        """``5m`` or ``forever``; a number is seconds (0 is forever)."""
        if isinstance(value, str):
            return parse_wait(value, option="backlogDrainTimeout")
        if isinstance(value, int | float) and not isinstance(value, bool) and value < 0:
            raise ConfigError(
                f"{value!r} is no wait",
                path="backlogDrainTimeout",
                value=value,
                allowed="a duration (5m, 90s), or forever",
            )
        return value

    @field_validator("message_size", mode="before")
    @classmethod
    def _size_text(cls, value: Any) -> Any:
        return parse_size(value, "messageSize") if isinstance(value, str) else value

    @field_validator("producer_rate_profile", mode="before")
    @classmethod
    def _profile(cls, value: Any) -> tuple[RateSegment, ...] | None:
        return parse_profile(value)

    @field_serializer("producer_rate_profile")
    def _profile_as_yaml(self, value: tuple[RateSegment, ...] | None) -> list | None:
        return None if value is None else profile_to_yaml(value)

    @model_validator(mode="after")
    def _consistent(self) -> Workload:
        """Checks across fields; ConfigError (not ValueError) so the message names the field."""
        check_distribution(
            self.message_sizes, self.message_size_range, self.message_size, self.payload_file
        )
        if self.use_randomized_payloads and self.randomized_payload_pool_size < 1:
            raise ConfigError(
                "randomizedPayloadPoolSize must be at least 1 when useRandomizedPayloads is true",
                path="randomizedPayloadPoolSize",
                value=self.randomized_payload_pool_size,
                allowed=">= 1",
            )
        if -1 < self.producer_rate < 0:
            raise ConfigError(
                "producerRate must be > 0 msg/s, or 0 / -1 for rate discovery",
                path="producerRate",
                value=self.producer_rate,
                allowed="> 0, or 0 / -1",
            )
        profile = self.producer_rate_profile
        if profile and profile[0].kind == "ramp" and self.producer_rate <= 0:
            raise ConfigError(
                "a producerRateProfile that opens with a ramp starts from producerRate, "
                "which must then be a rate",
                path="producerRate",
                value=self.producer_rate,
                allowed="> 0 (or open the profile with a {rate, duration} step)",
            )
        if self.consumer_backlog_size_gb > 0 and self.is_rate_discovery:
            raise ConfigError(
                "cannot discover the producer rate while building a backlog "
                "(consumerBacklogSizeGB > 0 needs producerRate > 0)",
                path="producerRate",
                value=self.producer_rate,
                allowed="> 0",
            )
        if self.consumer_backlog_size_gb > 0 and profile:
            raise ConfigError(
                "a producerRateProfile cannot drive a catch-up run: its backlog phases last "
                "as long as building and draining take, so the profile's times mean nothing",
                path="producerRateProfile",
                value=f"{len(profile)} segment(s)",
                allowed="no producerRateProfile when consumerBacklogSizeGB > 0",
            )
        if self.tailing_subscriptions_per_topic and not (
            self.consumer_backlog_size_gb > 0
            and self.tailing_subscriptions_per_topic < self.subscriptions_per_topic
        ):
            raise ConfigError(
                "tailingSubscriptionsPerTopic makes a mixed run: it needs consumerBacklogSizeGB "
                "> 0 and at least one catch-up subscription left in subscriptionsPerTopic",
                path="tailingSubscriptionsPerTopic",
                value=self.tailing_subscriptions_per_topic,
                allowed=f"0 .. {max(self.subscriptions_per_topic - 1, 0)}, "
                "with consumerBacklogSizeGB > 0",
            )
        if self.consumer_backlog_size_gb > 0 and self.total_consumers == 0:
            raise ConfigError(
                "a catch-up run needs consumers to read the backlog",
                path="consumerBacklogSizeGB",
                value=self.consumer_backlog_size_gb,
                allowed="0 when subscriptionsPerTopic or consumerPerSubscription is 0",
            )
        if self.consumer_backlog_size_gb > 0 and self.producers_per_topic == 0:
            raise ConfigError(
                "a catch-up run needs producers to build the backlog",
                path="consumerBacklogSizeGB",
                value=self.consumer_backlog_size_gb,
                allowed="0 when producersPerTopic is 0",
            )
        if self.consumer_changes:
            self._check_consumer_changes()
        check_faults_within(self.faults, self.test_duration_s)
        if self.topics * self.partitions_per_topic > MAX_TOTAL_PARTITIONS:
            raise ConfigError(
                f"topics × partitionsPerTopic is above {MAX_TOTAL_PARTITIONS:,}",
                path="partitionsPerTopic",
                value=self.partitions_per_topic,
                allowed=f"topics × partitionsPerTopic <= {MAX_TOTAL_PARTITIONS:,}",
            )
        return self

    def _check_consumer_changes(self) -> None:
        if self.total_consumers == 0 or self.is_catch_up:
            raise ConfigError(
                "consumers join and leave the subscriptions of a tailing run: it needs "
                "consumers, and no consumerBacklogSizeGB",
                path="consumerChanges",
                value=f"{len(self.consumer_changes)} change(s)",
                allowed="subscriptionsPerTopic and consumerPerSubscription >= 1, "
                "consumerBacklogSizeGB 0",
            )
        check_changes(self.consumer_changes, self.consumer_per_subscription)
        check_within(self.consumer_changes, self.test_duration_s)

    @property
    def total_producers(self) -> int:
        return self.topics * self.producers_per_topic

    @property
    def total_consumers(self) -> int:
        return self.topics * self.subscriptions_per_topic * self.consumer_per_subscription

    @property
    def is_catch_up(self) -> bool:
        """OMB's backlog mode: pause consumers, build ``consumerBacklogSizeGB``, drain it."""
        return self.consumer_backlog_size_gb > 0

    @property
    def catch_up_subscriptions_per_topic(self) -> int:
        return self.subscriptions_per_topic - self.tailing_subscriptions_per_topic

    @property
    def is_rate_discovery(self) -> bool:
        """OMB's ``producerRate: 0`` (and -1), without a profile: find the highest sustainable
        rate."""
        return self.producer_rate <= 0 and self.producer_rate_profile is None

    @property
    def start_rate(self) -> float:
        """The rate load starts at: the profile's first step, else ``producerRate``."""
        profile = self.producer_rate_profile
        return profile[0].rate if profile and profile[0].kind == "step" else self.producer_rate

    @property
    def test_duration_s(self) -> float:
        return self.test_duration_minutes * 60.0

    @property
    def warmup_duration_s(self) -> float:
        return self.warmup_duration_minutes * 60.0


def load_workload(path: str | Path, *, lenient: bool = False) -> Workload:
    return parse_model(Workload, load_yaml(path), file=str(path), lenient=lenient)


def resolve_payload_file(workload: Workload, workload_path: str | Path | None) -> Path:
    """``payloadFile`` relative to the working directory (OMB), else to the workload's folder.

    Its length must equal ``messageSize`` (OMB's rule): a file payload is sent as it is.
    """
    file = str(workload_path) if workload_path is not None else None
    if workload.payload_file is None:
        raise ConfigError(
            "the workload names no payload file", file=file, path="payloadFile", allowed="a path"
        )
    candidates = [Path(workload.payload_file)]
    if workload_path is not None:
        candidates.append(Path(workload_path).parent / workload.payload_file)
    found = next((candidate for candidate in candidates if candidate.is_file()), None)
    if found is None:
        raise ConfigError(
            "payload file not found",
            file=file,
            path="payloadFile",
            value=workload.payload_file,
            allowed="a path relative to the working directory or to the workload file",
        )
    size = found.stat().st_size
    if size != workload.message_size:
        raise ConfigError(
            f"payload file {str(found)!r} is {size} bytes but messageSize is "
            f"{workload.message_size}",
            file=file,
            path="payloadFile",
            value=workload.payload_file,
            allowed=f"a file of exactly {workload.message_size} bytes",
        )
    return found
