"""CPU per landing line of the pipeline's two tasks, parse and merge, without Spark.

Usage: python bench/pipeline_tasks.py [--runs 40] [--rounds 5] [--code NAME=SRC ...]

The set is bench/pipeline_throughput.py's (one real run fanned out into ``--runs`` runs). Each
source tree named by ``--code`` runs in a child process of its own (its ``PYTHONPATH``), which
times the parse task over every file and then the merge task over all the parsed lines as one
partition by the process's CPU clock, three times (the least is kept: the same work, less
disturbed); ``--rounds`` such children per tree, the trees alternating, and the median µs per
line of each task is printed. The ratio against the first tree, measured in the
same run, is the figure to compare: the absolute numbers move with the machine's day.
What this leaves out is Spark's part (reading the files' list, the shuffle, the writes):
bench/pipeline_throughput.py measures the whole job.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pipeline_throughput import REPO, fan_out, source_run

TIMED = """
import json, sys, time
from pathlib import Path
import pyarrow as pa
from loadgen.pipeline.tasks.merge import merge_partition
from loadgen.pipeline.tasks.parse import parse_batches

paths = [p.resolve().as_uri() for p in sorted(Path(sys.argv[1]).glob("*.json"))]
files = pa.RecordBatch.from_pylist([{"path": path} for path in paths])
parse, merge = [], []
for _ in range(int(sys.argv[2])):
    started = time.process_time()
    parsed = list(parse_batches(iter([files])))
    parse.append(time.process_time() - started)
    lines = sum(batch.num_rows for batch in parsed)
    started = time.process_time()
    list(merge_partition(iter(parsed), 0.0))
    merge.append(time.process_time() - started)
print(json.dumps({"lines": lines, "parse": min(parse), "merge": min(merge)}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--code", nargs="+", default=[f"this={REPO / 'src'}"], metavar="NAME=SRC")
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "loadgen-pipeline-source"
    )
    args = parser.parse_args()
    source = source_run(args.cache)
    with tempfile.TemporaryDirectory(prefix="loadgen-tasks-") as base:
        lines = fan_out(source, Path(base), args.runs)
        print(f"fanned out: {args.runs} runs, {lines} lines")
        codes = dict(item.split("=", 1) for item in args.code)
        per_line: dict[str, dict[str, list[float]]] = {code: {} for code in codes}
        for round_number in range(args.rounds):
            order = list(codes) if round_number % 2 == 0 else list(codes)[::-1]
            for code in order:
                env = {**os.environ, "PYTHONPATH": str(Path(codes[code]).resolve())}
                found = json.loads(
                    subprocess.run(
                        [sys.executable, "-c", TIMED, base, "3"],
                        env=env, check=True, capture_output=True, text=True,
                    ).stdout
                )  # fmt: skip
                for task in ("parse", "merge"):
                    micros = found[task] / found["lines"] * 1e6
                    per_line[code].setdefault(task, []).append(micros)
                print(
                    f"round {round_number} {code}: parse {per_line[code]['parse'][-1]:.1f},"
                    f" merge {per_line[code]['merge'][-1]:.1f} µs a line",
                    flush=True,
                )
    first = next(iter(codes))
    for code in codes:
        medians = {task: statistics.median(found) for task, found in per_line[code].items()}
        ratios = {
            task: medians[task] / statistics.median(per_line[first][task]) for task in medians
        }
        print(
            f"median {code}: parse {medians['parse']:.1f} µs a line (x{ratios['parse']:.2f}),"
            f" merge {medians['merge']:.1f} µs a line (x{ratios['merge']:.2f}) of {first}"
        )


if __name__ == "__main__":
    main()
