"""One run, described once: what to run, on what, how, where, and who hears about it.

``loadgen run``, ``sweep``, ``matrix`` and the Python API each build a :class:`RunRequest` and
hand it to :mod:`loadgen.running.runner`, which passes it down whole: the scenario reads its
options,
the result document its workload, driver and placement, so no layer re-lists them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from loadgen.distributed.placement import Placement
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.listeners import RunListener
from loadgen.metrics.board import MetricsBoard
from loadgen.running.hooks import RunHooks
from loadgen.spec import Workload


@dataclass(frozen=True)
class RunOptions:
    """How to run a workload; ``None`` durations mean "as the workload says".

    Every field is a setting: the result echoes them all under ``run.options``.
    """

    duration_s: float | None = None
    warmup_s: float | None = None
    stats_interval_s: float = 10.0
    keep_topics: bool = False
    topic_names: tuple[str, ...] = ()
    """Use these topics (created if absent, never deleted) instead of fresh random ones."""
    probe_timeout_s: float = 60.0
    reachable_timeout_s: float = 10.0
    drain_timeout_s: float = 10.0
    catch_up_timeout_s: float = 600.0
    """Longest a catch-up run builds its backlog, and (unless ``backlog_drain_timeout_s`` or
    the workload says otherwise) longest it drains it."""
    backlog_drain_timeout_s: float | None = None
    """Longest a catch-up run drains its backlog; 0 waits as long as it takes, even when it
    does not shrink (OMB); ``None``: the workload's ``backlogDrainTimeout``, else
    ``catch_up_timeout_s``."""
    pipeline_dir: str | None = None
    """Land every interval for the Spark pipeline here (:mod:`loadgen.pipeline.landing`)."""
    started_ms: int | None = None
    """When the run counts as started (epoch ms; now by default): names its result file."""


@dataclass(frozen=True)
class RunRequest:
    """Everything one run needs, built by the CLI or the API and passed down unchanged."""

    workload: Workload
    driver: DriverSpec
    options: RunOptions = field(default_factory=RunOptions)
    workload_path: Path | None = None
    """The workload's file: names an unnamed workload and resolves its ``payloadFile``."""
    out_dir: Path | None = None
    """Where the result goes (and its checkpoint while the run goes); ``None``: nowhere."""
    placement: Placement = field(default_factory=Placement)
    hooks: RunHooks = field(default_factory=RunHooks)
    listeners: tuple[RunListener, ...] = ()
    """Told of every phase and interval, after the run's own (board, landing, checkpoint)."""
    metrics: MetricsBoard | None = None
    """Publish every phase and interval here, for a Prometheus endpoint (:mod:`loadgen.metrics`)."""

    @property
    def name(self) -> str:
        """The workload's ``name``, else its file's stem."""
        path = self.workload_path
        return self.workload.name or (path.stem if path else "workload")
