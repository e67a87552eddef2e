"""Where a run's producers and consumers run: this process, N local processes, or remote workers.

One process (the default of the Python API) is the in-process :class:`LocalWorker`; more are
an :class:`~.ensemble.Ensemble` over local ``loadgen worker`` processes
(:mod:`.spawn`), or over the workers at the URLs given, which the coordinator only connects to.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from loadgen.base import calibration
from loadgen.base.errors import ConfigError, ConsumerChangesNeedOneWorker
from loadgen.distributed.client import CONNECT_TIMEOUT_S, ControlPlane
from loadgen.distributed.ensemble import Ensemble
from loadgen.distributed.sizing import ProcessCount, cpus_here, default_process_count
from loadgen.distributed.spawn import local_workers
from loadgen.distributed.split import BY_TOPIC, OMB, SPLITS, workers_needed
from loadgen.driver_api import load_driver_class, open_driver
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.contract import Worker
from loadgen.engine.local_worker import LocalWorker
from loadgen.spec import Workload


def worker_urls(text: str) -> tuple[str, ...]:
    """``URL,URL,...`` as given to ``--workers``; each an http(s) URL with a host."""
    urls = tuple(part.strip().rstrip("/") for part in text.split(",") if part.strip())
    for url in urls:
        scheme, sep, rest = url.partition("://")
        if scheme not in ("http", "https") or not sep or not rest:
            raise ConfigError(
                "not a worker URL",
                path="--workers",
                value=url,
                allowed="http://HOST:PORT[,http://HOST:PORT...]",
            )
    if not urls:
        raise ConfigError("no worker URL given", path="--workers", value=text, allowed="URL,URL")
    return urls


@dataclass(frozen=True)
class Placement:
    """``workers`` (URLs) win over ``processes``; ``split`` defaults to OMB's rule, or to
    whole topics per worker for a driver whose broker lives inside one process."""

    workers: tuple[str, ...] = ()
    processes: int | None = 1
    """``None``: sized to each run's workload (:meth:`sized`)."""
    split: str | None = None
    token: str | None = field(default=None, repr=False)
    cpus: tuple[int, ...] = ()
    """``--cpus``: local worker process ``i`` is pinned to ``cpus[i % len(cpus)]``."""
    workers_wait_s: float | None = None
    """``--workers-wait``: how long each of ``workers`` may take to answer first, retried while
    its port refuses (a worker still starting). ``None`` (not given): :data:`CONNECT_TIMEOUT_S`
    for an answer, and a refused connection fails the run at once."""
    chosen: ProcessCount | None = None
    """Why ``processes`` is what it is; :meth:`sized` fills it in where the caller did not."""

    def sized(self, spec: DriverSpec, workload: Workload) -> Placement:
        """This placement for one run: the process count fixed, and why."""
        if self.chosen is not None:
            return self
        if self.workers:
            count = len(self.workers)
            return replace(self, chosen=ProcessCount(count, "--workers", "one per worker URL"))
        if self.processes is not None:
            asked = ProcessCount(self.processes, "--processes", "asked")
            return replace(self, chosen=asked)
        capacity = calibration.current().process_capacity.get(spec.kind)
        choice = default_process_count(self.rule(spec), workload, capacity, cpus_here(), spec.kind)
        return replace(self, processes=choice.count, chosen=choice)

    def rule(self, spec: DriverSpec) -> str:
        process_local = load_driver_class(spec).process_local
        if self.split is None:
            return BY_TOPIC if process_local else OMB
        if self.split not in SPLITS:
            raise ConfigError("unknown split", path="--split", value=self.split, allowed=SPLITS)
        if process_local and self.split != BY_TOPIC and self.count() > 1:
            raise ConfigError(
                f"the {spec.kind} driver's broker lives inside each process, so a worker can "
                "only consume what it produced itself",
                path="--split",
                value=self.split,
                allowed=[BY_TOPIC],
            )
        return self.split

    @property
    def first_answer_wait_s(self) -> float:
        """How long each of ``workers`` may take to answer first."""
        return CONNECT_TIMEOUT_S if self.workers_wait_s is None else self.workers_wait_s

    def count(self) -> int:
        """Workers or processes; 1 while the count is still to be sized."""
        return len(self.workers) or self.processes or 1

    def describe(self) -> dict[str, object]:
        """What goes into the result's run options (never the token)."""
        return {
            "workers": list(self.workers),
            "processes": self.processes,
            "processesChosen": None if self.chosen is None else self.chosen.to_json(),
            "split": self.split,
            "cpus": list(self.cpus),
            "workersWaitSeconds": self.first_answer_wait_s,
        }


@contextlib.contextmanager
def open_worker(spec: DriverSpec, workload: Workload, placement: Placement) -> Iterator[Worker]:
    """The worker a scenario drives for this placement, as sized for the run
    (:meth:`Placement.sized`, done when the run starts); worker processes it started end with
    the block."""
    rule = placement.rule(spec)
    processes = workers_needed(rule, placement.count(), workload.topics)
    if workload.consumer_changes and (placement.workers or processes > 1):
        raise ConsumerChangesNeedOneWorker(len(placement.workers) or processes)
    if placement.workers:
        urls = list(placement.workers)
        wait_s = placement.first_answer_wait_s
        late = placement.workers_wait_s is not None  # a refusing port is retried for wait_s
        with _ensemble(
            urls, spec, rule, placement.token, wait_s, correct_clocks=True, retry_refused=late
        ) as ensemble:
            yield ensemble
        return
    if processes <= 1:
        yield LocalWorker(open_driver(spec))
        return
    token = secrets.token_urlsafe(24)
    with (
        local_workers(processes, token, placement.cpus) as spawned,
        _ensemble(spawned.urls, spec, rule, token) as ensemble,
    ):
        yield ensemble
        if ensemble.interrupted:  # a worker may still be in a driver call: it ends on its
            spawned.wait_s = 0.0  # own once its stdin closes; the user should not wait for it


@contextlib.contextmanager
def _ensemble(
    urls: list[str],
    spec: DriverSpec,
    rule: str,
    token: str | None,
    wait_s: float = CONNECT_TIMEOUT_S,
    *,
    correct_clocks: bool = False,
    retry_refused: bool = False,
) -> Iterator[Ensemble]:
    plane = ControlPlane(token)
    try:
        yield Ensemble(
            plane,
            urls,
            spec,
            rule,
            wait_s,
            correct_clocks=correct_clocks,
            retry_refused=retry_refused,
        )
    finally:
        plane.close()
