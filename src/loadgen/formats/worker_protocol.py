"""What crosses the wire between coordinator and worker: JSON bodies, checked on arrival.

Histograms travel as HdrHistogram V2 compressed base64 (the result JSON's own encoding), so a
merged percentile is computed over exactly the values every worker recorded. Every request body
is a pydantic model with ``extra="forbid"``: a malformed request is refused with the field named.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from loadgen.base import hdr
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.local_worker import Totals
from loadgen.engine.skew import ClockTable
from loadgen.engine.stats import ALL_METRICS, IntervalStats

PROTOCOL = 5
"""Bumped when a request or answer changes shape; coordinator and worker must agree."""


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DriverBody(Body):
    name: str
    kind: str
    config: dict[str, Any]
    source: str | None = None
    lenient: bool = False
    reachable_timeout_s: float = Field(gt=0, le=600)

    @classmethod
    def of(cls, spec: DriverSpec, reachable_timeout_s: float) -> DriverBody:
        return cls(
            name=spec.name,
            kind=spec.kind,
            config=dict(spec.config),
            source=spec.source,
            lenient=spec.lenient,
            reachable_timeout_s=reachable_timeout_s,
        )

    def spec(self) -> DriverSpec:
        return DriverSpec(self.name, self.kind, self.config, self.source, self.lenient)


class TopicsBody(Body):
    count: int = Field(ge=1, le=1_000_000)
    partitions: int = Field(ge=1, le=1_000_000)
    names: list[str] = []


class AdoptBody(Body):
    names: list[str] = Field(min_length=1)
    partitions: int = Field(ge=1, le=1_000_000)


class ConsumersBody(Body):
    subscriptions: list[tuple[str, str]]
    catch_up: list[str] = []
    """The subscriptions (names) whose consumers build and then read a backlog."""
    delays: list[float] = []
    """Seconds each consumer sleeps per message, cycled (the workload's ``consumerDelay``)."""


class PauseBody(Body):
    paused: bool


class ProducersBody(Body):
    topics: list[str]
    first_number: int = Field(default=0, ge=0, lt=2**23)
    """The run-wide number of the first producer (message ids carry it)."""


class ClockBody(Body):
    """A consumer's worker's clock correction (:mod:`loadgen.engine.skew`)."""

    own_offset_ns: int
    producers: list[tuple[int, int, int]]
    """``(first producer number, count, offset ns)`` per worker that has producers."""

    def table(self) -> ClockTable:
        return ClockTable(self.own_offset_ns, [tuple(p) for p in self.producers])


class TimeoutBody(Body):
    timeout_s: float = Field(ge=0, le=3600)


class AccountingBody(Body):
    ask_broker: bool = False
    """Also ask the broker what each subscription has yet to read (:mod:`loadgen.engine.unread`)."""


class LoadBody(Body):
    rate: float = Field(gt=0)
    payloads: list[str] = Field(min_length=1)
    """Base64, so any bytes travel in JSON."""
    key_distributor: str
    max_in_flight: int | None = Field(default=None, ge=1)

    @classmethod
    def of(
        cls,
        rate: float,
        payloads: list[bytes],
        key_distributor: str,
        max_in_flight: int | None = None,
    ) -> LoadBody:
        encoded = [base64.b64encode(payload).decode() for payload in payloads]
        return cls(
            rate=rate,
            payloads=encoded,
            key_distributor=key_distributor,
            max_in_flight=max_in_flight,
        )

    def payload_bytes(self) -> list[bytes]:
        return [base64.b64decode(payload, validate=True) for payload in self.payloads]


class RateBody(Body):
    rate: float = Field(gt=0, allow_inf_nan=False)
    keep_lag: bool


class SnapshotBody(Body):
    start_ms: int
    end_ms: int
    warmup: bool


class CloseBody(Body):
    delete_topics: bool


def stats_to_json(
    stats: IntervalStats, encode: Callable[[hdr.Histogram], str] = hdr.encode
) -> dict[str, Any]:
    """``stats`` as JSON, each histogram as ``encode`` writes it (V2 base64 on the wire; the
    journal's own packed form in :mod:`loadgen.formats.journal`)."""
    return {
        "startMs": stats.start_ms,
        "endMs": stats.end_ms,
        "sent": stats.sent,
        "sendErrors": stats.send_errors,
        "bytesSent": stats.bytes_sent,
        "received": stats.received,
        "bytesReceived": stats.bytes_received,
        "negativeE2e": stats.negative_e2e,
        "negativeE2eUncorrected": stats.negative_e2e_uncorrected,
        "duplicates": stats.duplicates,
        "outOfOrder": stats.out_of_order,
        "receivedCatchUp": stats.received_catch_up,
        "cpuNs": stats.cpu_ns,
        "cpuWaitNs": stats.cpu_wait_ns,
        "cpuSlices": stats.cpu_slices,
        "withdrawn": stats.withdrawn,
        "warmup": stats.warmup,
        "histograms": {metric: encode(h) for metric, h in stats.histograms.items()},
    }


def _decoded(encoded: dict[str, str]) -> Mapping[str, hdr.Histogram]:
    known = (metric for metric in encoded if metric in ALL_METRICS)
    return {metric: hdr.decode(metric, encoded[metric]) for metric in known}


def stats_from_json(
    data: dict[str, Any],
    histograms: Callable[[dict[str, str]], Mapping[str, hdr.Histogram]] = _decoded,
) -> IntervalStats:
    """What :func:`stats_to_json` wrote; ``histograms`` reads its encoded histograms."""
    return IntervalStats(
        start_ms=data["startMs"],
        end_ms=data["endMs"],
        sent=data["sent"],
        send_errors=data["sendErrors"],
        bytes_sent=data["bytesSent"],
        received=data["received"],
        bytes_received=data["bytesReceived"],
        negative_e2e=data["negativeE2e"],
        negative_e2e_uncorrected=data["negativeE2eUncorrected"],
        duplicates=data["duplicates"],
        out_of_order=data["outOfOrder"],
        received_catch_up=data["receivedCatchUp"],
        cpu_ns=data["cpuNs"],
        cpu_wait_ns=data["cpuWaitNs"],
        cpu_slices=data["cpuSlices"],
        withdrawn=data.get("withdrawn", 0),  # absent before transactions
        warmup=data["warmup"],
        histograms=histograms(data["histograms"]),
    )


def totals_to_json(totals: Totals) -> dict[str, int]:
    return {
        "sent": totals.sent,
        "received": totals.received,
        "probeSent": totals.probe_sent,
        "probeReceived": totals.probe_received,
        "receivedCatchUp": totals.received_catch_up,
    }


def totals_from_json(data: dict[str, int]) -> Totals:
    return Totals(
        data["sent"],
        data["received"],
        data["probeSent"],
        data["probeReceived"],
        data["receivedCatchUp"],
    )
