"""The pipeline's merge: landing lines of one (run, metric) in, final interval and run rows out.

Plain Python over :mod:`loadgen.base.hdr_core`, run in the Spark job's executor tasks
(:func:`merge_partition`: each task takes the (run, metric) groups Spark's shuffle gave it), so
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
import numbers
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from loadgen.base import hdr_core as hdr
from loadgen.base.hdr_core import METRICS
from loadgen.pipeline.tasks.collector import collector_paused
from loadgen.pipeline.tasks.records import (
    CLOSE,
    COUNTERS,
    END,
    INTERVAL,
    META_DIGEST,
    OUTPUT_COLUMNS,
    PROBLEM,
    RAW_LINE,
    RECORD_FIELDS,
    SOURCE_FILE,
    STATE,
    TABLE,
    TABLES,
    arrow_schema,
)

if TYPE_CHECKING:
    import pyarrow as pa

SUMMARY_COLUMNS = ("count", "mean", "min", *hdr.SUMMARY_PERCENTILES, "max")
"""Latency columns of both tables, in µs (``count`` is the histogram's total)."""

REQUIRED = {
    INTERVAL: ("run_id", "worker_id", "workers", "seq", "interval_start", "interval_end", "hist"),
    END: ("run_id", "worker_id", "workers", "seq"),
    CLOSE: ("run_id",),
}


def _sparse_text(histogram: hdr.Histogram) -> str:
    """The state's histogram form: its packed non-empty buckets, cheap to store and to merge."""
    return base64.b64encode(hdr.pack(histogram)).decode()


def _from_sparse_text(metric: str, text: str) -> hdr.Histogram:
    return hdr.unpack(metric, base64.b64decode(text))


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
    """Per worker that ended: ``intervals`` it announced, ``incomplete``, ``stop_reason``, and
    the run's ``faults`` (JSON text) when it had any."""
    measured: str = ""
    measured_intervals: int = 0
    measured_ms: int = 0
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    started: int | None = None
    ended_at: int | None = None
    finished: bool = False

    def dumps(self) -> str:
        return json.dumps(self, default=vars)  # this and its Waiting items as their fields

    @classmethod
    def loads(cls, text: str) -> RunState:
        data = json.loads(text)
        data["waiting"] = {seq: Waiting(**item) for seq, item in data["waiting"].items()}
        return cls(**data)


@dataclass
class Step:
    """What one call produced: the state to keep (``None``: nothing to keep) and the rows of
    each output table, one field per table name of :data:`loadgen.pipeline.tasks.records.TABLES`."""

    state: RunState | None
    intervals: list[dict[str, Any]] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    quarantine: list[dict[str, Any]] = field(default_factory=list)


def _missing(value: Any) -> bool:
    return value is None or value != value  # null, or a NaN (pandas' null)


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


SUMMARY_OF = "_summary_of"
"""The histogram whose summary columns a row still needs (:func:`fill_summaries`)."""


def fill_summaries(rows: list[dict[str, Any]]) -> None:
    """The summary columns of every row that waits for them, all computed in one call."""
    waiting = [row for row in rows if SUMMARY_OF in row]
    found = hdr.summaries([row.pop(SUMMARY_OF) for row in waiting])
    for row, latency in zip(waiting, found, strict=True):
        row.update({name: getattr(latency, name) for name in SUMMARY_COLUMNS})


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
    """Applies one batch of lines to one (run, metric) state.

    Histograms stay decoded while the batch is applied: a waiting interval's merged histogram
    in :attr:`_waiting`, the run's measured intervals as parts in :attr:`_measured`, merged once
    (:meth:`_measured_histogram`). :meth:`close` writes them back into the state's text form.
    An interval one worker reported in this batch keeps that worker's encoding (:attr:`_texts`):
    the same bytes a new encoding would give for a histogram loadgen landed."""

    def __init__(
        self, run_id: str | None, metric: str | None, state: RunState | None, now: float
    ) -> None:
        self.run_id = run_id
        self.metric = metric
        self.state = state
        self.now = now
        self.step = Step(state)
        self._waiting: dict[str, hdr.Histogram] = {}
        self._texts: dict[str, str] = {}
        self._measured: list[hdr.Histogram] = []
        self._emitted = set(state.emitted) if state is not None else set()
        self._labels: dict[str, Any] | None = None

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
        histogram = row.get(DECODED)
        if histogram is None:
            histogram = hdr.decode_many([str(self.metric)], [str(row["hist"])])[0]
        if isinstance(histogram, Exception):  # the line's fault, not the job's
            return f"histogram not readable as {self.metric}: {histogram}"
        state = self._ensure_state(row)
        seq, worker = int(row["seq"]), str(row["worker_id"])
        key = str(seq)
        waiting = state.waiting.get(key)
        if seq in self._emitted or (waiting and worker in waiting.workers):
            return f"duplicate: worker {worker} already reported interval {seq}"
        counters = {name: 0 if _missing(row.get(name)) else int(row[name]) for name in COUNTERS}
        start, end = int(row["interval_start"]), int(row["interval_end"])
        warmup = _flag(row.get("warmup"))
        state.seen[worker] = state.seen.get(worker, 0) + 1
        if state.workers == 1:  # the only worker: its interval is final as it comes
            self._record(seq, start, end, warmup, 1, True, counters, histogram, row["hist"])
            return None
        if waiting is None:
            state.waiting[key] = Waiting(start, end, warmup, [worker], counters, hist="")
            self._waiting[key] = histogram
            self._texts[key] = str(row["hist"])
        else:
            waiting.start = min(waiting.start, start)
            waiting.end = max(waiting.end, end)
            waiting.warmup = waiting.warmup and warmup
            waiting.workers.append(worker)
            waiting.counters = {n: waiting.counters[n] + counters[n] for n in COUNTERS}
            self._waiting[key] = hdr.merge(self.metric, [self._waiting_histogram(key), histogram])
            self._texts.pop(key, None)
        if len(state.waiting[key].workers) >= state.workers:
            self._emit(seq, complete=True)
        return None

    def _waiting_histogram(self, key: str) -> hdr.Histogram:
        """Interval ``key``'s histogram so far: decoded this batch, or from the state's text."""
        if key not in self._waiting:
            assert self.state is not None and self.metric is not None
            self._waiting[key] = _from_sparse_text(self.metric, self.state.waiting[key].hist)
        return self._waiting[key]

    def _end(self, row: Mapping[str, Any]) -> str | None:
        state = self._ensure_state(row)
        worker = str(row["worker_id"])
        if worker in state.ended:
            return f"duplicate: worker {worker} already ended run {self.run_id}"
        state.ended[worker] = {
            "intervals": int(row["seq"]),
            "incomplete": _flag(row.get("incomplete")),
            "stop_reason": None if _missing(row.get("stop_reason")) else row["stop_reason"],
            "faults": None if _missing(row.get("faults")) else row["faults"],
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
        key = str(seq)
        histogram = self._waiting_histogram(key)
        del self._waiting[key]
        text = self._texts.pop(key, None)
        item = state.waiting.pop(key)
        self._record(
            seq, item.start, item.end, item.warmup, len(item.workers), complete, item.counters,
            histogram, text,
        )  # fmt: skip

    def _record(
        self,
        seq: int,
        start: int,
        end: int,
        warmup: bool,
        reported: int,
        complete: bool,
        counters: dict[str, int],
        histogram: hdr.Histogram,
        text: str | None,
    ) -> None:
        """Interval ``seq``'s row, and its part of the run when measured. ``reported``: how
        many workers' lines it merges; one worker's ``text`` is the row's histogram as it came,
        a merged one is encoded anew."""
        state = self.state
        assert state is not None
        self._emitted.add(seq)
        state.emitted.append(seq)
        if not warmup:
            self._measured.append(histogram)
            state.measured_intervals += 1
            state.measured_ms += max(end - start, 1)
            state.counters = {n: state.counters[n] + counters[n] for n in COUNTERS}
            state.started = start if state.started is None else state.started
            state.ended_at = end
        self.step.intervals.append(
            {
                **self._labels_of_rows(),
                "seq": seq,
                "interval_start": start,
                "interval_end": end,
                "warmup": warmup,
                "workers_reported": reported,
                "complete": complete,
                **counters,
                SUMMARY_OF: histogram,
                "hist": text if text and reported == 1 else hdr.encode(histogram),
                "merged_at": self.now,
            }
        )

    def _measured_histogram(self) -> hdr.Histogram:
        """The run's measured intervals merged: the state's, and those emitted this batch."""
        state = self.state
        assert state is not None and self.metric is not None
        parts = self._measured
        if state.measured:
            parts = [_from_sparse_text(self.metric, state.measured), *parts]
        return hdr.merge(self.metric, parts)

    def _labels_of_rows(self) -> dict[str, Any]:
        """The group's label columns: set when its state is made, the same on every row."""
        state = self.state
        assert state is not None
        if self._labels is None:
            self._labels = {
                "run_id": self.run_id,
                "metric": self.metric,
                "workload": state.workload,
                "driver": state.driver,
                "driver_kind": state.driver_kind,
                "workers": state.workers,
            }
        return self._labels

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
        ended = list(state.ended.values())
        reasons = [end["stop_reason"] for end in ended if end["stop_reason"]]
        if reason:
            reasons.append(reason)
        complete = (
            reason is None
            and not any(end["incomplete"] for end in state.ended.values())
            and all(row["complete"] for row in self.step.intervals)
        )
        histogram = self._measured_histogram()
        seconds = state.measured_ms / 1000.0
        self.step.runs.append(
            {
                **self._labels_of_rows(),
                "intervals": state.measured_intervals,
                "run_start": state.started,
                "run_end": state.ended_at,
                "seconds": seconds,
                "complete": complete,
                "stop_reason": "; ".join(sorted(set(reasons))) or None,
                **state.counters,
                "publish_rate": state.counters["sent"] / seconds if seconds else 0.0,
                "consume_rate": state.counters["received"] / seconds if seconds else 0.0,
                SUMMARY_OF: histogram,
                "hist": hdr.encode(histogram),
                "meta": state.meta,
                "merged_at": self.now,
                "faults": next((e["faults"] for e in ended if e.get("faults")), None),
            }
        )
        # the tombstone is the group's state from here on, so later lines of this very batch
        # (a second close, say) are quarantined as late instead of finishing the run again
        self.state = self.step.state = RunState(
            state.workload, state.driver, state.driver_kind, state.workers, None, finished=True
        )
        self._waiting, self._texts, self._measured = {}, {}, []

    def close(self) -> None:
        """Write the batch's decoded histograms back into the state's text form."""
        state = self.state
        if state is None or state.finished:
            return
        if self._measured:
            state.measured = _sparse_text(self._measured_histogram())
            self._measured = []
        for key, histogram in self._waiting.items():
            state.waiting[key].hist = _sparse_text(histogram)
        self._waiting, self._texts = {}, {}


ORDER = {INTERVAL: 0, END: 1, CLOSE: 2}


def advance(
    run_id: str | None,
    metric: str | None,
    state: RunState | None,
    rows: Iterable[Mapping[str, Any]],
    now: float,
    *,
    summarize: bool = True,
) -> Step:
    """Apply a batch of landing lines of one (run, metric) to its state.

    Intervals go before end markers, and intervals in order, so a batch holding a worker's last
    interval and its end marker finishes the run in one go. A group without a run id or a known
    metric (a malformed line) only ever yields quarantine rows. ``summarize=False`` leaves the
    rows' summary columns to the caller's :func:`fill_summaries` (one call for many groups).
    """
    group = _Group(run_id, metric, state, now)
    for row in sorted(rows, key=lambda r: (ORDER.get(r.get("kind"), 3), _seq_of(r))):
        group.take(row)
    group.finish_if_done()
    group.close()
    if summarize:
        fill_summaries([*group.step.intervals, *group.step.runs])
    return group.step


def _seq_of(row: Mapping[str, Any]) -> int:
    seq = row.get("seq")
    if type(seq) is int:  # as Arrow gives it: cheaper than the ABC check below, per line
        return seq
    return int(seq) if isinstance(seq, numbers.Integral) else -1


def merge_partition(batches: Iterator[pa.RecordBatch], now: float) -> Iterator[pa.RecordBatch]:
    """The merge task (``mapInArrow`` after a shuffle by run and metric): every group of the
    partition advanced from its state, out as rows of
    :data:`~loadgen.pipeline.tasks.records.OUTPUT_COLUMNS` (``table`` says which).

    A row with a :data:`~loadgen.pipeline.tasks.records.STATE` is a group's state from the
    previous batch, every other row a landing line. A group whose merge raises (a bug, not
    input: input problems are quarantine rows) has its lines quarantined with the error and
    keeps its previous state, so no batch can fail on it and replay into the same failure."""
    import pyarrow as pa

    with collector_paused():
        out = _merged_rows(batches, now)
    schema = arrow_schema(OUTPUT_COLUMNS)
    columns = schema.remove(schema.get_field_index(TABLE))
    for table, rows in out.items():
        for start in range(0, len(rows), OUTPUT_BATCH_ROWS):
            part = pa.RecordBatch.from_pylist(rows[start : start + OUTPUT_BATCH_ROWS], columns)
            named = pa.array([table] * part.num_rows, pa.string())
            yield pa.RecordBatch.from_arrays(
                [named if name == TABLE else part.column(name) for name in schema.names],
                schema=schema,
            )


def _merged_rows(batches: Iterator[pa.RecordBatch], now: float) -> dict[str, list[dict[str, Any]]]:
    """Every group of the task's rows advanced, by :data:`OUTPUTS`."""
    lines: dict[tuple[Any, Any], list[dict[str, Any]]] = defaultdict(list)
    states: dict[tuple[Any, Any], str] = {}
    for batch in batches:
        for row in batch.to_pylist():
            key = (row["run_id"], row["metric"])
            if row[STATE] is not None:
                states[key] = row[STATE]
            else:
                lines[key].append(row)
    _decode_histograms([row for rows in lines.values() for row in rows])
    out: dict[str, list[dict[str, Any]]] = {table: [] for table in OUTPUTS}
    for key, rows in lines.items():
        for table, found in group_rows(key, states.pop(key, None), rows, now).items():
            out[table] += found
    out[STATE] += [_state_row(key, text) for key, text in states.items()]
    fill_summaries([*out["intervals"], *out["runs"]])
    return out


DECODED = "_decoded"
"""A row's histogram, decoded ahead with every other row of the task (or the decoding error)."""


def _decode_histograms(rows: list[dict[str, Any]]) -> None:
    """Decode the histograms of every interval line of a task at once, into :data:`DECODED`."""
    wanted = [
        row
        for row in rows
        if row.get("kind") == INTERVAL
        and row.get("metric") in METRICS
        and isinstance(row.get("hist"), str)
    ]
    decoded = hdr.decode_many([row["metric"] for row in wanted], [row["hist"] for row in wanted])
    for row, histogram in zip(wanted, decoded, strict=True):
        row[DECODED] = histogram


OUTPUT_BATCH_ROWS = 2048
"""Rows per Arrow batch handed back to Spark (each row holds one or two encoded histograms)."""


OUTPUTS = (*TABLES, STATE)
"""What the merge's rows are for: a table, or the state (the :data:`TABLE` column)."""


def group_rows(
    key: tuple[Any, Any], state_text: str | None, rows: list[dict[str, Any]], now: float
) -> dict[str, list[dict[str, Any]]]:
    """One group's output rows by :data:`OUTPUTS`: its interval, run and quarantine rows and
    its new state."""
    run_id, metric = key
    try:
        restore_meta(rows)
        state = RunState.loads(state_text) if state_text is not None else None
        step = advance(run_id, metric, state, rows, now, summarize=False)
    except Exception as error:  # a bug must not fail the batch: the lines wait in quarantine
        reason = f"the merge failed on this group: {type(error).__name__}: {error}"
        kept = [_state_row(key, state_text)] if state_text is not None else []
        return {"quarantine": [quarantine_row(row, reason, now) for row in rows], STATE: kept}
    found = {table: getattr(step, table) for table in TABLES}
    new_state = [] if step.state is None else [_state_row(key, step.state.dumps())]
    return found | {STATE: new_state}


def restore_meta(rows: list[dict[str, Any]]) -> None:
    """Each line's ``meta`` back from the line of its group that carried it (the parse task
    sent it once: :class:`loadgen.pipeline.tasks.parse.MetaOnce`); a digest no line of the
    group carries is a bug, raised."""
    carried = {
        row[META_DIGEST]: row["meta"]
        for row in rows
        if row.get("meta") is not None and row.get(META_DIGEST) is not None
    }
    for row in rows:
        digest = row.get(META_DIGEST)
        if digest is not None and row.get("meta") is None:
            row["meta"] = carried[digest]


def _state_row(key: tuple[Any, Any], text: str) -> dict[str, Any]:
    return {"run_id": key[0], "metric": key[1], STATE: text}
