"""The merge's state between micro-batches: one file per batch, ``OUT/_state/batch=<id>``.

Exactly once without Spark's state store: the sink writes a batch's tables, then the merge
states of every (run, metric) group after it (atomic rename). A batch starts from the state of
the highest batch id below its own, so a batch re-run after a crash (Spark re-runs the last
uncommitted one) starts from the same state as its first attempt and rewrites the same files,
whether or not that attempt got as far as writing its own state. Only the last two are kept.

The file: one line per group, its key ``[run_id, metric]`` as JSON, a tab, then
:meth:`loadgen.pipeline.merge.RunState.dumps` (JSON never holds a raw tab).
"""

from __future__ import annotations

import json
from pathlib import Path

from loadgen.pipeline.merge import RunState
from loadgen.pipeline.tables import STATE
from loadgen.results.files import write_text_atomic

Key = tuple[str, str]
PREFIX = "batch="
KEPT = 2


def _batches(folder: Path) -> dict[int, Path]:
    found = {}
    for path in folder.glob(f"{PREFIX}*"):
        suffix = path.name[len(PREFIX) :]
        if suffix.isdigit():
            found[int(suffix)] = path
    return found


def load(out: Path, batch_id: int) -> dict[Key, RunState]:
    """The groups' states after the highest batch below ``batch_id`` ({} before the first)."""
    earlier = {n: p for n, p in _batches(out / STATE).items() if n < batch_id}
    if not earlier:
        return {}
    states = {}
    for line in earlier[max(earlier)].read_text().splitlines():
        key, _, text = line.partition("\t")
        run_id, metric = json.loads(key)
        states[(run_id, metric)] = RunState.loads(text)
    return states


def save(out: Path, batch_id: int, states: dict[Key, RunState]) -> None:
    """The groups' states after ``batch_id``; the files of batches before the previous go."""
    folder = out / STATE
    lines = [f"{json.dumps(list(key))}\t{state.dumps()}\n" for key, state in states.items()]
    write_text_atomic(folder / f"{PREFIX}{batch_id}", "".join(lines))
    for number, path in _batches(folder).items():
        if number <= batch_id - KEPT:
            path.unlink(missing_ok=True)
