"""HdrHistogram interval logs: ``<result stem>.<metric>.hlog`` beside every result JSON.

The standard log format (version 1.3) that Java's ``HistogramLogReader``, HdrHistogram's
plotters and Python's ``hdrh`` read: a ``StartTime`` and a ``BaseTime`` tag (both the run's
start, so interval timestamps are seconds into the run), the legend, then one line per measured
interval — start, length, max in ms, and the interval's histogram (µs values) as base64 of the
compressed V2 encoding. Warm-up intervals are left out, as in the result's period lists.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from loadgen.base import hdr
from loadgen.base.files import write_text_atomic
from loadgen.engine.stats import IntervalStats, recorded_metrics

FORMAT_VERSION = "1.3"
LEGEND = '"StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"'
MICROS_PER_MS = 1000.0


def hlog_text(metric: str, intervals: list[IntervalStats], started_ms: int) -> str:
    """The log of ``metric`` over the measured ``intervals`` of a run started at ``started_ms``."""
    start_s = started_ms / 1000
    when = datetime.fromtimestamp(start_s, UTC).isoformat()
    lines = [
        f"#[loadgen {metric} latency, values in microseconds]",
        f"#[Histogram log format version {FORMAT_VERSION}]",
        f"#[StartTime: {start_s:.3f} (seconds since epoch), {when}]",
        f"#[BaseTime: {start_s:.3f} (seconds since epoch)]",
        LEGEND,
    ]
    lines += [hlog_line(metric, s, started_ms) for s in intervals if not s.warmup]
    return "\n".join(lines) + "\n"


def hlog_line(metric: str, interval: IntervalStats, started_ms: int) -> str:
    """The line of one measured interval (no line end): what a run appends as it goes."""
    histogram = interval.histogram(metric)
    return (
        f"{(interval.start_ms - started_ms) / 1000:.3f},{interval.seconds:.3f},"
        f"{histogram.max / MICROS_PER_MS:.3f},{hdr.encode(histogram)}"
    )


def hlog_path(result_path: Path, metric: str) -> Path:
    return result_path.with_name(f"{result_path.stem}.{metric}.hlog")


def write_hlogs(result_path: Path, intervals: list[IntervalStats], started_ms: int) -> list[Path]:
    """One log per latency metric, next to the result at ``result_path``."""
    paths = []
    for metric in recorded_metrics(intervals):
        path = hlog_path(result_path, metric)
        write_text_atomic(path, hlog_text(metric, intervals, started_ms))
        paths.append(path)
    return paths
