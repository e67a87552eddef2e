"""loadgen's HdrHistogram V2 codec (``loadgen.base.hdr_core``) against hdrh's, per histogram.

Usage: python bench/hdr_codec.py [--rounds 5] [--repeat 50]

For three interval sizes (2k, 50k and 1M end-to-end latencies, log-normal around 1.2 ms), it
times encoding and decoding one histogram both ways: loadgen's from its sparse buckets, hdrh's
``HdrHistogram.encode`` / ``decode`` on the same values (a dense counts array of the metric's
whole range). Both write the same bytes (checked here too). Prints each round's per-call
milliseconds and the median of the rounds.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
from hdrh.histogram import HdrHistogram

from loadgen.base import hdr
from loadgen.base.hdr_core import END_TO_END

SIZES = (2_000, 50_000, 1_000_000)


def per_call_ms(call: Callable[[], object], repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        call()
    return (time.perf_counter() - start) / repeat * 1e3


def hdrh_twin(histogram: hdr.Histogram) -> HdrHistogram:
    geometry = hdr.layout(histogram.metric)
    twin = HdrHistogram(1, geometry.highest, hdr.SIGNIFICANT_DIGITS)
    lowest = geometry.equivalents(histogram.index)[0]
    for value, count in zip(lowest.tolist(), histogram.counts.tolist(), strict=True):
        twin.record_value(value, count)
    return twin


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    for size in SIZES:
        histogram = hdr.record_ns(END_TO_END, rng.lognormal(14, 1.2, size).astype(np.int64))
        twin = hdrh_twin(histogram)
        text = hdr.encode(histogram)
        assert text == twin.encode().decode("ascii")
        calls = {
            "encode loadgen": lambda h=histogram: hdr.encode(h),
            "encode hdrh": twin.encode,
            "decode loadgen": lambda t=text: hdr.decode(END_TO_END, t),
            "decode hdrh": lambda t=text: HdrHistogram.decode(t),
        }
        for name, call in calls.items():
            rounds = [per_call_ms(call, args.repeat) for _ in range(args.rounds)]
            shown = " ".join(f"{ms:.3f}" for ms in rounds)
            print(
                f"{size:>9,} values {len(histogram.index):>6,} buckets  {name:15} "
                f"median {statistics.median(rounds):.3f} ms  ({shown})",
                flush=True,
            )


if __name__ == "__main__":
    main()
