"""The coordinator's worker: a scenario's calls split over worker processes, results merged.

Worker 0 leads: it creates (and at the end deletes) the topics, the others adopt them. Producers
and consumers are placed by :mod:`.split`; interval stats of all workers are merged with
:func:`~loadgen.engine.stats.merge_all`, so counts add and percentiles come from the merged
histograms.
A worker that stops answering is reported once, left out from then on, and ends the run with
``stopReason: worker-lost``; what every worker measured until then stays in the result.
Workers given by URL may run on hosts whose clocks differ: their measured offsets correct the
end-to-end latencies (:mod:`loadgen.engine.skew`); local worker processes share one clock.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import replace
from typing import Any

from loadgen.base.cpu_use import CpuMeter
from loadgen.base.errors import ConfigError, ConsumerChangesNeedOneWorker, WorkerError, WorkerLost
from loadgen.base.thread_names import name_threads_for_the_os
from loadgen.distributed.client import CONNECT_TIMEOUT_S, ControlPlane, WorkerClient
from loadgen.distributed.clock import ClockOffset, PairShift, e2e_skew_bound_ns, pair_shifts
from loadgen.distributed.split import Assignment, split
from loadgen.driver_api import open_driver
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.local_worker import MIN_RATE, Progress, Totals, await_probes
from loadgen.engine.plan import Subscription
from loadgen.engine.spill import Spill
from loadgen.engine.stats import IntervalStats, merge_all
from loadgen.formats import worker_protocol as wire

log = logging.getLogger("loadgen.distributed")

SETUP_TIMEOUT_S = 300.0
"""Creating topics or clients can take long (thousands of them, a slow controller)."""
COUNTERS_TIMEOUT_S = 10.0
"""Counters are plain integer reads on the worker's event loop; 10 s without one is a hung
worker (stopped, swapping), reported as lost instead of stalling the run's stats."""
AFTER_INTERRUPT_S = 1.0
"""How long a request may take once the user pressed Ctrl-C (an idle worker takes ms)."""

Call = Callable[[WorkerClient], Awaitable[dict[str, Any]]]


def _ms(ns: int) -> float:
    return round(ns / 1e6, 3)


def _correction(applied: bool, shifts: Sequence[PairShift]) -> dict[str, Any]:
    """The result's ``run.clockCorrection``: whether the e2e latencies were corrected, by how
    much per worker pair, and how far the correction itself may be off (its bound)."""
    return {
        "applied": applied,
        "pairs": [
            {
                "producerWorker": s.producer,
                "consumerWorker": s.consumer,
                "shiftMs": _ms(s.shift_ns),
                "boundMs": _ms(s.bound_ns),
            }
            for s in shifts
        ],
        "maxShiftMs": _ms(max((abs(s.shift_ns) for s in shifts), default=0)),
        "boundMs": _ms(max((s.bound_ns for s in shifts), default=0)),
    }


class Ensemble:
    """Drives the workers at ``urls`` as one :class:`~loadgen.engine.contract.Worker`;
    ``wait_s`` is how long each may take to answer first (``retry_refused``: while its port
    refuses too, else a refusal fails at once); ``correct_clocks`` when they may run on hosts
    of their own."""

    def __init__(
        self,
        plane: ControlPlane,
        urls: Sequence[str],
        spec: DriverSpec,
        rule: str,
        wait_s: float = CONNECT_TIMEOUT_S,
        *,
        correct_clocks: bool = False,
        retry_refused: bool = False,
    ):
        self._plane = plane
        self._wait_s = wait_s
        self._retry_refused = retry_refused
        self._clients = [WorkerClient(url, plane.session) for url in urls]
        self._spec = spec
        self._rule = rule
        self._topics: list[str] = []
        self._topic_scaling: list[dict[str, Any]] = []
        self._consumers: list[Subscription] = []
        self._assignments = [Assignment() for _ in self._clients]
        self._totals = {client.url: Totals() for client in self._clients}
        self._offsets: dict[str, ClockOffset] = {}
        self._correct_clocks = correct_clocks
        self._clocks_corrected = False
        self._affinity: dict[str, list[int] | None] = {}
        self._engines: dict[str, str | None] = {}
        """Each worker's recorder engine, as its ``/health`` said (``None``: it did not say)."""
        self._cpu = CpuMeter()
        self.lost: dict[str, str] = {}
        """Workers that stopped answering, with what was seen."""
        self._interrupted = False
        self._unresponsive: set[str] = set()
        """Workers that did not answer within the short wait after a Ctrl-C."""
        self.worker_intervals: dict[str, list[IntervalStats]] = {
            client.url: [] for client in self._clients
        }
        self._spill = Spill()

    # -- calling workers ---------------------------------------------------------------------
    def _live(self, clients: Sequence[WorkerClient] | None = None) -> list[WorkerClient]:
        gone = self.lost.keys() | self._unresponsive
        return [c for c in (self._clients if clients is None else clients) if c.url not in gone]

    def _each(
        self,
        call: Call,
        clients: Sequence[WorkerClient] | None = None,
        *,
        tolerant: bool = False,
        blocking: bool = False,
    ) -> list[tuple[WorkerClient, dict[str, Any]]]:
        """``call`` on every live worker (of ``clients``) at once; their answers in order.

        A worker that is lost is recorded. Unless ``tolerant``, the first error is raised once
        all calls ended; ``tolerant`` calls (stats, stop, close) return the answers they got.
        After a Ctrl-C every call is tolerant and waits at most :data:`AFTER_INTERRUPT_S`; a
        worker that had not answered a ``blocking`` call (one that can hold the worker for
        long: opening a driver, creating topics) is not called again — it is busy, and had
        nothing measured yet.
        """
        targets = self._live(clients)
        answered: set[str] = set()

        async def tracked(client: WorkerClient) -> dict[str, Any]:
            try:
                return await call(client)
            finally:
                answered.add(client.url)

        async def gather() -> list[dict[str, Any] | BaseException]:
            return await asyncio.gather(*(tracked(c) for c in targets), return_exceptions=True)

        try:
            answers = self._plane.run(gather())
        except KeyboardInterrupt:
            self._interrupted = True
            for client in self._clients:
                client.deadline_cap_s = AFTER_INTERRUPT_S
            if blocking:
                self._unresponsive |= {c.url for c in targets} - answered
            raise
        done, errors = [], []
        for client, answer in zip(targets, answers, strict=True):
            if isinstance(answer, WorkerLost) and self._interrupted:
                self._unresponsive.add(client.url)
            elif isinstance(answer, WorkerLost):
                self._lose(client, answer)
            if isinstance(answer, BaseException):
                errors.append(answer)
            else:
                done.append((client, answer))
        if errors and not (tolerant or self._interrupted):
            raise errors[0]
        for error in errors:
            if not isinstance(error, WorkerLost):  # those were reported as they were lost
                log.warning("%s", error)
        return done

    def _lose(self, client: WorkerClient, error: WorkerLost) -> None:
        if client.url not in self.lost:
            log.error("%s", error)
            self.lost[client.url] = error.cause

    @property
    def _leader(self) -> WorkerClient:
        return self._clients[0]

    def _with(self, has: Callable[[Assignment], object]) -> list[WorkerClient]:
        return [c for c, a in zip(self._clients, self._assignments, strict=True) if has(a)]

    # -- set-up ------------------------------------------------------------------------------
    def check_reachable(self, timeout_s: float) -> None:
        """Every worker answers (within ``wait_s``; a refusal fails at once unless
        ``retry_refused``), speaks our protocol, has its clock measured, and has the driver
        open with its broker reachable."""
        healths = self._each(
            lambda c: c.first_contact(self._wait_s, retry_refused=self._retry_refused)
        )
        for client, health in healths:
            self._affinity[client.url] = health.get("cpuAffinity")
            self._engines[client.url] = health.get("recorderEngine")
            if health.get("protocol") != wire.PROTOCOL:
                raise ConfigError(
                    f"worker {client.url} speaks protocol {health.get('protocol')} "
                    f"(loadgen {health.get('loadgen')}), this coordinator {wire.PROTOCOL}",
                    path="--workers",
                    value=client.url,
                    allowed="workers running the same loadgen version",
                )

        async def measure(client: WorkerClient) -> dict[str, Any]:
            self._offsets[client.url] = await client.clock_offset()
            return {}

        self._each(measure)
        body = wire.DriverBody.of(self._spec, timeout_s).model_dump()
        self._each(
            lambda c: c.request("POST", "/driver", body, timeout_s=timeout_s + SETUP_TIMEOUT_S),
            blocking=True,
        )

    def create_topics(self, count: int, partitions: int, names: tuple[str, ...] = ()) -> list[str]:
        body = wire.TopicsBody(count=count, partitions=partitions, names=list(names))
        [(_, answer)] = self._each(
            lambda c: c.request("POST", "/topics", body.model_dump(), timeout_s=SETUP_TIMEOUT_S),
            [self._leader],
            blocking=True,
        )
        self._topics = answer["topics"]
        adopt = wire.AdoptBody(names=self._topics, partitions=partitions).model_dump()
        self._each(
            lambda c: c.request("POST", "/topics/adopt", adopt, timeout_s=SETUP_TIMEOUT_S),
            self._clients[1:],
            blocking=True,
        )
        return self._topics

    def create_consumers(
        self,
        subscriptions: Sequence[Subscription],
        catch_up: Collection[str] = (),
        delays: Sequence[float] = (),
    ) -> None:
        self._consumers = list(subscriptions)
        placed = split(self._rule, len(self._clients), self._topics, [], self._consumers)
        self._create(
            "/consumers",
            "subscriptions",
            [a.consumers for a in placed],
            catch_up=sorted(catch_up),
            delays=list(delays),
        )

    def pause_catch_up(self, paused: bool) -> None:
        self._each(
            lambda c: c.request(
                "POST", "/consumers/catch-up", {"paused": paused}, timeout_s=SETUP_TIMEOUT_S
            ),
            self._with(lambda a: a.consumers),
            blocking=True,
        )

    def partition_leader(self, partition: int) -> str | None:
        """Asked of a driver of the coordinator's own, opened for the question (the workers'
        protocol has none)."""
        if not self._topics:
            return None
        driver = open_driver(self._spec)
        try:
            return driver.partition_leader(self._topics[0], partition)
        finally:
            driver.close()

    def change_consumers(self, *, join: int, leave: int) -> None:
        """Refused: the changes are not split over workers (:func:`.placement.open_worker`
        refuses them before any worker is asked)."""
        raise ConsumerChangesNeedOneWorker(len(self._clients))

    def create_producers(self, topics: Sequence[str]) -> None:
        self._assignments = split(
            self._rule, len(self._clients), self._topics, list(topics), self._consumers
        )
        shares = [a.producers for a in self._assignments]
        firsts = [sum(len(share) for share in shares[:i]) for i in range(len(shares))]
        self._create("/producers", "topics", shares, [{"first_number": first} for first in firsts])
        shifts = self._shifts()
        if self._correct_clocks and shifts and any(s.shift_ns for s in shifts):
            self._send_clock_tables(
                [(first, len(share)) for first, share in zip(firsts, shares, strict=True)]
            )

    def _send_clock_tables(self, numbers: Sequence[tuple[int, int]]) -> None:
        """Every consumer's worker learns the offset of each producer's worker
        (``numbers``: each worker's first producer number and producer count)."""
        producers = [
            (first, count, self._offsets[client.url].offset_ns)
            for client, (first, count) in zip(self._clients, numbers, strict=True)
            if count
        ]

        def send(client: WorkerClient) -> Awaitable[dict[str, Any]]:
            own = self._offsets[client.url].offset_ns
            body = wire.ClockBody(own_offset_ns=own, producers=producers)
            return client.request("POST", "/clock/correction", body.model_dump())

        self._each(send, self._with(lambda a: a.consumers))
        self._clocks_corrected = True

    def _create(
        self,
        path: str,
        field: str,
        shares: list[tuple],
        per_worker: Sequence[dict[str, Any]] = (),
        **extra: Any,
    ) -> None:
        """POST each worker its share, with the ``extra`` fields and its own ``per_worker``."""
        own = list(per_worker) or [{} for _ in shares]
        bodies = {
            c.url: {field: list(share), **extra, **fields}
            for c, share, fields in zip(self._clients, shares, own, strict=True)
        }
        self._each(
            lambda c: c.request("POST", path, bodies[c.url], timeout_s=SETUP_TIMEOUT_S),
            [c for c in self._clients if bodies[c.url][field]],
            blocking=True,
        )

    @property
    def has_consumers(self) -> bool:
        return bool(self._consumers)

    # -- readiness ---------------------------------------------------------------------------
    def probe(self, expected_received: int, timeout_s: float) -> None:
        """OMB's readiness check across workers: producer workers send and wait for the acks,
        then every worker's consumers count until all probe messages arrived."""
        deadline = time.monotonic() + timeout_s
        self._each(
            lambda c: c.request(
                "POST", "/probe/send", {"timeout_s": timeout_s}, timeout_s=timeout_s + 10
            ),
            self._with(lambda a: a.producers),
            blocking=True,
        )
        await_probes(self.received_so_far, expected_received, deadline, timeout_s)
        for client, answer in self._each(lambda c: c.request("POST", "/probe/end")):
            self._totals[client.url] = wire.totals_from_json(answer["totals"])

    # -- load ----------------------------------------------------------------------------------
    def _rate_shares(self) -> dict[str, float]:
        return {c.url: a.rate_share for c, a in zip(self._clients, self._assignments, strict=True)}

    def start_load(
        self,
        rate: float,
        payloads: list[bytes],
        key_distributor: str,
        max_in_flight: int | None = None,
    ) -> None:
        shares = self._rate_shares()
        pool = wire.LoadBody.of(rate, payloads, key_distributor, max_in_flight)

        def start(client: WorkerClient) -> Awaitable[dict[str, Any]]:
            body = pool.model_copy(update={"rate": rate * shares[client.url]})
            return client.request("POST", "/load/start", body.model_dump())

        self._each(start, self._with(lambda a: a.rate_share > 0))
        name_threads_for_the_os()  # the coordinator's own: journal writer, control plane

    def adjust_rate(self, rate: float, *, keep_lag: bool) -> None:
        """The new total rate, split as :meth:`start_load` split the first one."""
        shares = self._rate_shares()

        def adjust(client: WorkerClient) -> Awaitable[dict[str, Any]]:
            share = max(rate * shares[client.url], MIN_RATE)
            body = wire.RateBody(rate=share, keep_lag=keep_lag)
            return client.request("POST", "/load/rate", body.model_dump())

        self._each(adjust, self._with(lambda a: a.rate_share > 0))

    def stop_load(self, flush_timeout_s: float) -> int:
        answers = self._each(
            lambda c: c.request(
                "POST", "/load/stop", {"timeout_s": flush_timeout_s}, timeout_s=flush_timeout_s + 10
            ),
            self._with(lambda a: a.producers),
            tolerant=True,
        )
        return sum(answer["pending"] for _, answer in answers)

    def loop_error(self) -> BaseException | None:
        for client, answer in self._counters():
            if answer.get("loopError"):
                return WorkerError(client.url, f"the producer loop stopped: {answer['loopError']}")
        if self.lost:
            url, detail = next(iter(self.lost.items()))
            return WorkerLost(url, detail)
        return None

    # -- measurement ---------------------------------------------------------------------------
    def _counters(self) -> list[tuple[WorkerClient, dict[str, Any]]]:
        return self._each(
            lambda c: c.request("GET", "/counters", timeout_s=COUNTERS_TIMEOUT_S), tolerant=True
        )

    def _counter(self, name: str) -> int:
        return sum(answer[name] for _, answer in self._counters())

    def sent_so_far(self) -> int:
        return self._counter("sentSoFar")

    def received_so_far(self) -> int:
        return self._counter("receivedSoFar")

    def received_catch_up_so_far(self) -> int:
        return self._counter("receivedCatchUpSoFar")

    def progress(self) -> Progress:
        """One request per worker for all three counters."""
        answers = [answer for _, answer in self._counters()]
        return Progress(
            sum(answer["sentSoFar"] for answer in answers),
            sum(answer["receivedSoFar"] for answer in answers),
            sum(answer["errorsSoFar"] for answer in answers),
        )

    @property
    def totals(self) -> Totals:
        summed = Totals()
        for part in self._totals.values():
            summed.sent += part.sent
            summed.received += part.received
            summed.probe_sent += part.probe_sent
            summed.probe_received += part.probe_received
            summed.received_catch_up += part.received_catch_up
        return summed

    def snapshot(self, start_ms: int, end_ms: int, *, warmup: bool) -> IntervalStats:
        """Every live worker's interval, merged; a worker that does not answer is left out."""
        if not self._consumers and not any(a.producers for a in self._assignments):
            return IntervalStats(start_ms, end_ms, warmup=warmup)  # nothing can have been measured
        body = wire.SnapshotBody(start_ms=start_ms, end_ms=end_ms, warmup=warmup).model_dump()
        parts = []
        for client, answer in self._each(
            lambda c: c.request("POST", "/snapshot", body), tolerant=True
        ):
            stats = wire.stats_from_json(answer["stats"])
            self._totals[client.url] = wire.totals_from_json(answer["totals"])
            self.worker_intervals[client.url].append(self._spill.keep(stats))
            parts.append(stats)
        merged = merge_all(parts) if parts else IntervalStats(start_ms, end_ms)
        own = self._cpu.take()  # the coordinator is part of the run's cost, and of its host
        return replace(
            merged,
            start_ms=start_ms,
            end_ms=end_ms,
            warmup=warmup,
            cpu_ns=merged.cpu_ns + own.cpu_ns,
            cpu_wait_ns=merged.cpu_wait_ns + own.wait_ns,
            cpu_slices=merged.cpu_slices + own.slices,
        )

    def accounting(self, *, ask_broker: bool = False) -> list[dict[str, Any]]:
        """Every live worker's id ranges; the caller unions them (a lost worker's are missing,
        and such a run is incomplete). A worker that never answered has none. One that does
        not answer now raises: without its ranges, what it received would count as lost."""
        body = wire.AccountingBody(ask_broker=ask_broker).model_dump()
        answers = self._each(
            lambda c: c.request("POST", "/accounting", body),
            [c for c in self._clients if c.answered],
        )
        return [answer["ledger"] for _, answer in answers]

    def placement(self) -> dict[str, Any]:
        """Worker URLs (the leader first), roles, clock offsets, their correction, the e2e
        skew bound and each worker's recorder engine."""
        pairs = zip(self._clients, self._assignments, strict=True)
        roles = {client.url: assignment.role for client, assignment in pairs}
        measured = self._offsets
        shifts = self._shifts()
        bound = (
            None if shifts is None else e2e_skew_bound_ns(shifts, corrected=self._clocks_corrected)
        )
        return {
            "workers": [c.url for c in self._clients],
            "clockOffsetsMs": {url: _ms(o.offset_ns) for url, o in measured.items()},
            "clockOffsetBoundsMs": {url: _ms(o.bound_ns) for url, o in measured.items()},
            "e2eClockSkewBoundMs": None if bound is None else _ms(bound),
            "clockCorrection": _correction(self._clocks_corrected, shifts or []),
            "split": self._rule,
            "workerRoles": roles,
            "workerTotals": {url: wire.totals_to_json(t) for url, t in self._totals.items()},
            "workerCpuAffinity": dict(self._affinity),
            "recorderEngines": dict(self._engines),
            "lostWorkers": dict(self.lost),
        }

    def _shifts(self) -> list[PairShift] | None:
        """The clock shifts of the worker pairs that share a topic; ``None`` if an offset is
        missing."""
        sharing = self._sharing_pairs()
        if not all(p in self._offsets and c in self._offsets for p, c in sharing):
            return None
        return pair_shifts(self._offsets, sharing)

    @property
    def interrupted(self) -> bool:
        """Whether a Ctrl-C cut a request short (its worker may still be busy with it)."""
        return self._interrupted

    def _sharing_pairs(self) -> list[tuple[str, str]]:
        """``(producer worker, consumer worker)`` pairs with a topic in common."""
        consumed = {
            c.url: {topic for topic, _ in a.consumers}
            for c, a in zip(self._clients, self._assignments, strict=True)
        }
        return [
            (producer.url, consumer)
            for producer, a in zip(self._clients, self._assignments, strict=True)
            for consumer, topics in consumed.items()
            if topics & set(a.producers)
        ]

    # -- teardown --------------------------------------------------------------------------------
    def topic_scaling(self) -> list[dict[str, Any]]:
        return self._topic_scaling

    def close(self, *, delete_topics: bool) -> None:
        """The followers first (deleting what they created to consume, if the topics go),
        then the leader, which deletes the topics; a worker that never answered has nothing to
        close."""
        followers = [c for c in self._clients[1:] if c.answered]
        leader = [self._leader] if self._leader.answered else []
        body = {"delete_topics": delete_topics}

        def close(clients: list[WorkerClient]) -> list[tuple[WorkerClient, dict[str, Any]]]:
            return self._each(
                lambda c: c.request("POST", "/close", body, timeout_s=SETUP_TIMEOUT_S),
                clients,
                tolerant=True,
            )

        close(followers)
        for _, answer in close(leader):  # the leader created the topics: it says how they scaled
            self._topic_scaling = answer.get("topicScaling", [])
        if delete_topics and self._leader.url in self.lost:
            log.warning(
                "the leader %s was lost; topics %s may remain", self._leader.url, self._topics
            )
