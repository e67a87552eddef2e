"""What the HTML report costs: a cold ``loadgen report`` and a warm in-process render.

Usage: python bench/report_render.py RESULT.json [--rounds 5]

The cold number is what ``loadgen run`` adds after each run (a fresh interpreter imports
matplotlib and renders four charts); the warm one is the rendering alone.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def cold_seconds(result: Path, out: Path) -> float:
    started = time.perf_counter()
    command = [sys.executable, "-m", "loadgen", "report", str(result), "-o", str(out)]
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("result", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "report.html"
        cold = [cold_seconds(args.result, out) for _ in range(args.rounds)]
        from loadgen.report import series
        from loadgen.report.html import write_report

        write_report([args.result], out)  # imports and font cache warm
        warm = []
        for _ in range(args.rounds):
            series._decoded.cache_clear()  # each round decodes the histograms, as a run does
            started = time.perf_counter()
            write_report([args.result], out)
            warm.append(time.perf_counter() - started)
        size = out.stat().st_size
    for label, samples in (("cold `loadgen report`", cold), ("warm write_report", warm)):
        shown = " ".join(f"{s:.3f}" for s in samples)
        print(f"{label:<24} median {statistics.median(samples):.3f} s   rounds: {shown}")
    print(f"report size {size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
