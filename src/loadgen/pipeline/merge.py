"""The pipeline's merge: landing lines of one (run, metric) in, final interval and run rows out.

Plain Python over :mod:`loadgen.hdr`, run in the Spark job's driver (its micro-batch sink), so
the job and the unit tests run the same code and every percentile is the one the run's result
JSON has (Java-equal, exact merges).

Per (run, metric) the state holds the intervals still waiting for a worker, the run's merged
measured histogram and counters, and which workers have ended. An interval is emitted once, when
every worker has reported it; the run row is emitted once, when every worker's end marker and all
the intervals it announced have arrived — or, for a run whose worker died without an end marker,
when a ``close`` marker arrives (then the rows say ``complete = false``). There is deliberately
no timeout: a run that goes quiet is closed by hand (``loadgen pipeline close``), never by a
clock that would drop a slow worker's late lines.

A line that cannot be used (malformed, unknown metric, bad histogram, a duplicate, too late)
becomes a quarantine row with the reason; it never stops the job and never touches the others.
"""

from __future__ import annotations

import base64
import json
import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from loadgen import hdr
from loadgen.pipeline import codec
from loadgen.pipeline.landing import CLOSE, COUNTERS, END, INTERVAL, RECORD_FIELDS
from loadgen.pipeline.tables import PROBLEM, RAW_LINE, SOURCE_FILE
from loadgen.stats import METRICS

SUMMARY_COLUMNS = ("count", "mean", "min", *hdr.SUMMARY_PERCENTILES, "max")
"""Latency columns of both tables, in µs (``count`` is the histogram's total)."""

REQUIRED = {
    INTERVAL: ("run_id", "worker_id", "workers", "seq", "interval_start", "interval_end", "hist"),
    END: ("run_id", "worker_id", "workers", "seq"),
    CLOSE: ("run_id",),
}


def _sparse_text(histogram: hdr.Histogram) -> str:
    """The state's histogram form: its non-empty buckets, cheap to store and to merge."""
    index = base64.b64encode(histogram.index.astype("<i8").tobytes()).decode()
    counts = base64.b64encode(histogram.counts.astype("<i8").tobytes()).decode()
    return f"{index}.{counts}"


def _from_sparse_text(metric: str, text: str) -> hdr.Histogram:
    index, counts = (np.frombuffer(base64.b64decode(part), "<i8") for part in text.split("."))
    return hdr.Histogram(metric, index.astype(np.int64), counts.astype(np.int64))


@dataclass
class Waiting:
    """An interval some workers have reported and others not yet."""

    start: int
    end: int
    warmup: bool
    workers: list[str]
    counters: dict[str, int]
    hist: str


@dataclass
class RunState:
    """Everything one (run, metric) group remembers between micro-batches."""

    workload: str | None
    driver: str | None
    driver_kind: str | None
    workers: int
    meta: str | None
    waiting: dict[str, Waiting] = field(default_factory=dict)
    emitted: list[int] = field(default_factory=list)
    seen: dict[str, int] = field(default_factory=dict)
    """Intervals received per worker."""
    ended: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per worker that ended: ``intervals`` it announced, ``incomplete``, ``stop_reason``."""
    measured: str = ""
    measured_intervals: int = 0
    measured_ms: int = 0
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    started: int | None = None
    ended_at: int | None = None
    finished: bool = False

    def dumps(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def loads(cls, text: str) -> RunState:
        data = json.loads(text)
        data["waiting"] = {seq: Waiting(**item) for seq, item in data["waiting"].items()}
        return cls(**data)


@dataclass
class Step:
    """What one call produced: the state to keep (``None``: nothing to keep) and the rows of
    each output table, one field per table name of :data:`loadgen.pipeline.tables.TABLES`."""

    state: RunState | None
    intervals: list[dict[str, Any]] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    quarantine: list[dict[str, Any]] = field(default_factory=list)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _flag(value: Any) -> bool:
    return False if _missing(value) else bool(value)


def problem(row: Mapping[str, Any]) -> str | None:
    """Why ``row`` cannot be merged, or ``None`` when it can (the histogram is checked later)."""
    if not _missing(row.get(PROBLEM)):
        return str(row[PROBLEM])
    kind = row.get("kind")
    if kind not in REQUIRED:
        return f"unknown kind {kind!r} (allowed: {', '.join(REQUIRED)})"
    if row.get("metric") not in METRICS:
        return f"unknown metric {row.get('metric')!r} (allowed: {', '.join(METRICS)})"
    absent = [name for name in REQUIRED[kind] if _missing(row.get(name))]
    if absent:
        return f"missing field(s): {', '.join(absent)}"
    if "workers" in REQUIRED[kind] and int(row["workers"]) < 1:
        return f"workers must be at least 1, got {row['workers']}"
    return None


def quarantine_row(row: Mapping[str, Any], reason: str, now: float) -> dict[str, Any]:
    """The quarantine table's record of an unusable line: where it came from, why, and the line."""
    raw = row.get(RAW_LINE)
    if _missing(raw):
        fields = {k: v for k, v in row.items() if k in RECORD_FIELDS}
        raw = json.dumps({k: None if _missing(v) else v for k, v in fields.items()}, default=str)
    return {
        SOURCE_FILE: row.get(SOURCE_FILE),
        "run_id": None if _missing(row.get("run_id")) else row.get("run_id"),
        "metric": row.get("metric") if row.get("metric") in METRICS else None,
        "reason": reason,
        "raw": raw,
        "quarantined_at": now,
    }


def _summary(histogram: hdr.Histogram) -> dict[str, Any]:
    numbers = asdict(hdr.summary(histogram))
    return {name: numbers[name] for name in SUMMARY_COLUMNS}


def _new_state(row: Mapping[str, Any]) -> RunState:
    def text(name: str) -> str | None:
        return None if _missing(row.get(name)) else str(row[name])

    return RunState(
        workload=text("workload"),
        driver=text("driver"),
        driver_kind=text("driver_kind"),
        workers=int(row["workers"]),
        meta=text("meta"),
    )


class _Group:
    """Applies one batch of lines to one (run, metric) state."""

    def __init__(
        self, run_id: str | None, metric: str | None, state: RunState | None, now: float
    ) -> None:
        self.run_id = run_id
        self.metric = metric
        self.state = state
        self.now = now
        self.step = Step(state)

    def take(self, row: Mapping[str, Any]) -> None:
        reason = problem(row)
        if reason is None and self.state is not None and self.state.finished:
            reason = f"arrived after run {self.run_id} ({self.metric}) was finalised"
        if reason is None:
            reason = {INTERVAL: self._interval, END: self._end, CLOSE: self._close}[row["kind"]](
                row
            )
        if reason is not None:
            self.step.quarantine.append(quarantine_row(row, reason, self.now))

    def _ensure_state(self, row: Mapping[str, Any]) -> RunState:
        if self.state is None:
            self.state = self.step.state = _new_state(row)
        return self.state

    def _interval(self, row: Mapping[str, Any]) -> str | None:
        try:
            histogram = codec.decode(self.metric, str(row["hist"]))
        except Exception as error:  # any decoding failure is the line's fault, not the job's
            return f"histogram not readable as {self.metric}: {error}"
        state = self._ensure_state(row)
        seq, worker = int(row["seq"]), str(row["worker_id"])
        key = str(seq)
        waiting = state.waiting.get(key)
        if seq in state.emitted or (waiting and worker in waiting.workers):
            return f"duplicate: worker {worker} already reported interval {seq}"
        counters = {name: 0 if _missing(row.get(name)) else int(row[name]) for name in COUNTERS}
        if waiting is None:
            state.waiting[key] = Waiting(
                start=int(row["interval_start"]),
                end=int(row["interval_end"]),
                warmup=_flag(row.get("warmup")),
                workers=[worker],
                counters=counters,
                hist=_sparse_text(histogram),
            )
        else:
            waiting.start = min(waiting.start, int(row["interval_start"]))
            waiting.end = max(waiting.end, int(row["interval_end"]))
            waiting.warmup = waiting.warmup and _flag(row.get("warmup"))
            waiting.workers.append(worker)
            waiting.counters = {n: waiting.counters[n] + counters[n] for n in COUNTERS}
            merged = hdr.merge(
                self.metric, [_from_sparse_text(self.metric, waiting.hist), histogram]
            )
            waiting.hist = _sparse_text(merged)
        state.seen[worker] = state.seen.get(worker, 0) + 1
        if len(state.waiting[key].workers) >= state.workers:
            self._emit(seq, complete=True)
        return None

    def _end(self, row: Mapping[str, Any]) -> str | None:
        state = self._ensure_state(row)
        worker = str(row["worker_id"])
        if worker in state.ended:
            return f"duplicate: worker {worker} already ended run {self.run_id}"
        state.ended[worker] = {
            "intervals": int(row["seq"]),
            "incomplete": _flag(row.get("incomplete")),
            "stop_reason": None if _missing(row.get("stop_reason")) else row["stop_reason"],
        }
        return None

    def _close(self, row: Mapping[str, Any]) -> str | None:
        if self.state is None:
            return f"nothing was landed for run {self.run_id} ({self.metric}): nothing to close"
        reason = row.get("stop_reason")
        self.finish(reason=f"closed: {'no reason given' if _missing(reason) else reason}")
        return None

    def _emit(self, seq: int, *, complete: bool) -> None:
        state = self.state
        assert state is not None
        waiting = state.waiting.pop(str(seq))
        state.emitted.append(seq)
        histogram = _from_sparse_text(self.metric, waiting.hist)
        if not waiting.warmup:
            previous = _from_sparse_text(self.metric, state.measured) if state.measured else None
            merged = hdr.merge(self.metric, [h for h in (previous, histogram) if h is not None])
            state.measured = _sparse_text(merged)
            state.measured_intervals += 1
            state.measured_ms += max(waiting.end - waiting.start, 1)
            state.counters = {n: state.counters[n] + waiting.counters[n] for n in COUNTERS}
            state.started = waiting.start if state.started is None else state.started
            state.ended_at = waiting.end
        self.step.intervals.append(
            {
                **self._labels(),
                "seq": seq,
                "interval_start": waiting.start,
                "interval_end": waiting.end,
                "warmup": waiting.warmup,
                "workers_reported": len(waiting.workers),
                "complete": complete,
                **waiting.counters,
                **_summary(histogram),
                "hist": codec.encode(histogram),
                "merged_at": self.now,
            }
        )

    def _labels(self) -> dict[str, Any]:
        state = self.state
        assert state is not None
        return {
            "run_id": self.run_id,
            "metric": self.metric,
            "workload": state.workload,
            "driver": state.driver,
            "driver_kind": state.driver_kind,
            "workers": state.workers,
        }

    def finish_if_done(self) -> None:
        """Emit the run once every worker ended and every interval it announced arrived."""
        state = self.state
        if state is None or state.finished or len(state.ended) < state.workers:
            return
        if any(state.seen.get(w, 0) < end["intervals"] for w, end in state.ended.items()):
            return
        self.finish(reason=None)

    def finish(self, *, reason: str | None) -> None:
        """Flush the intervals still waiting (as incomplete) and emit the run row."""
        state = self.state
        assert state is not None
        for seq in sorted(int(key) for key in state.waiting):
            self._emit(seq, complete=False)
        reasons = [end["stop_reason"] for end in state.ended.values() if end["stop_reason"]]
        if reason:
            reasons.append(reason)
        complete = (
            reason is None
            and not any(end["incomplete"] for end in state.ended.values())
            and all(row["complete"] for row in self.step.intervals)
        )
        histogram = (
            _from_sparse_text(self.metric, state.measured)
            if state.measured
            else hdr.histogram_for(self.metric)
        )
        seconds = state.measured_ms / 1000.0
        self.step.runs.append(
            {
                **self._labels(),
                "intervals": state.measured_intervals,
                "run_start": state.started,
                "run_end": state.ended_at,
                "seconds": seconds,
                "complete": complete,
                "stop_reason": "; ".join(sorted(set(reasons))) or None,
                **state.counters,
                "publish_rate": state.counters["sent"] / seconds if seconds else 0.0,
                "consume_rate": state.counters["received"] / seconds if seconds else 0.0,
                **_summary(histogram),
                "hist": codec.encode(histogram),
                "meta": state.meta,
                "merged_at": self.now,
            }
        )
        # the tombstone is the group's state from here on, so later lines of this very batch
        # (a second close, say) are quarantined as late instead of finishing the run again
        self.state = self.step.state = RunState(
            state.workload, state.driver, state.driver_kind, state.workers, None, finished=True
        )


ORDER = {INTERVAL: 0, END: 1, CLOSE: 2}


def advance(
    run_id: str | None,
    metric: str | None,
    state: RunState | None,
    rows: Iterable[Mapping[str, Any]],
    now: float,
) -> Step:
    """Apply a batch of landing lines of one (run, metric) to its state.

    Intervals go before end markers, and intervals in order, so a batch holding a worker's last
    interval and its end marker finishes the run in one go. A group without a run id or a known
    metric (a malformed line) only ever yields quarantine rows.
    """
    group = _Group(run_id, metric, state, now)
    for row in sorted(rows, key=lambda r: (ORDER.get(r.get("kind"), 3), _seq_of(r))):
        group.take(row)
    group.finish_if_done()
    return group.step


def _seq_of(row: Mapping[str, Any]) -> int:
    seq = row.get("seq")
    return int(seq) if isinstance(seq, numbers.Integral) else -1
