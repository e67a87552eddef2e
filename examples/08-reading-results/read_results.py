"""Reading what a run leaves behind with plain Python: the result JSON, the --csv file, the
raw histograms in the JSON and, when DuckDB is installed, the same CSV through SQL.

    loadgen run memory:// --rate 2k --duration 2s --stats-interval 1s \\
        --csv results/reading/run.csv -o results/reading
    python examples/08-reading-results/read_results.py results/reading

With ``--tables DIR`` it also reads the Spark pipeline's Parquet tables (DuckDB or pyarrow;
``pipeline.sh`` beside this file makes them).

Look at: the per-interval lines (from the CSV), the totals and verdicts (from the JSON), and the
"agree" lines: the CSV's summary row, the JSON's aggregate and a percentile computed from the
JSON's histogram give the same end-to-end p99, as would the pipeline's ``runs`` table.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

from loadgen.base import hdr


def newest_result(folder: Path) -> Path:
    """The newest result JSON in ``folder`` (loadgen names them <workload>-<driver>-<time>)."""
    found = sorted(folder.glob("*.json"), key=lambda path: path.stat().st_mtime)
    if not found:
        sys.exit(f"no result JSON in {folder}")
    return found[-1]


def show_csv(path: Path) -> dict[str, str]:
    """Print one line per interval; return the summary row."""
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    print(f"{path}: {len(rows) - 1} intervals")
    for row in rows:
        print(
            f"  {row['phase']:<8} {float(row['seconds']):5.2f} s  sent {row['sent']:>6}  "
            f"{float(row['publish_rate']):8.0f} msg/s  e2e p99 {row['e2e_p99_ms']} ms  "
            f"backlog {row['backlog']}"
        )
    [summary] = [row for row in rows if row["phase"] == "summary"]
    return summary


def show_json(path: Path) -> dict:
    """Print the totals and verdicts; return the document."""
    doc = json.loads(path.read_text())
    print(f"{path.name}: {doc['workload']} on {doc['driver']}, run {doc['run']['runId']}")
    print(
        f"  sent {doc['totalMessagesSent']}, received {doc['totalMessagesReceived']}, "
        f"lost {doc['totalLost']}, duplicates {doc['totalDuplicates']}"
    )
    verdicts = doc["verdicts"]
    print(
        f"  verdicts: passed={verdicts['passed']} rate.held={verdicts['rate']['held']} "
        f"consumers.keptUp={verdicts['consumers']['keptUp']}"
    )
    print(f"  publishRate per interval: {[round(rate) for rate in doc['publishRate']]}")
    return doc


def p99_from_histogram(doc: dict) -> float:
    """e2e p99 in ms from the raw histogram (µs, HdrHistogram V2 base64): any percentile can be
    had this way, and histograms of several runs merge exactly (hdr.merge)."""
    histogram = hdr.decode("endToEnd", doc["histograms"]["endToEnd"]["aggregated"])
    return hdr.value_at_percentile(histogram, 99.0) / 1000


def duckdb_over_csv(path: Path) -> None:
    """The same CSV through SQL, when DuckDB is installed (it is in loadgen's [test] extra)."""
    try:
        import duckdb
    except ImportError:
        print("duckdb not installed: skipping the SQL view of the CSV")
        return
    rows = duckdb.sql(
        f"SELECT phase, count(*) AS rows, round(avg(publish_rate)) AS msg_s, "
        f"max(e2e_p99_ms) AS worst_p99_ms FROM read_csv_auto('{path}') GROUP BY phase "
        f"ORDER BY phase"
    ).fetchall()
    print("duckdb over the CSV (phase, rows, msg/s, worst interval p99 ms):")
    for row in rows:
        print(f"  {row}")


def runs_table_p99(tables: Path, run_id: str) -> float:
    """The run's e2e p99 in ms from the pipeline's ``runs`` table (latencies there are µs)."""
    try:
        import duckdb
    except ImportError:
        import pyarrow.dataset as ds

        runs = ds.dataset(tables / "runs", format="parquet", partitioning="hive").to_table()
        frame = runs.to_pandas()
        hit = frame[(frame.run_id == run_id) & (frame.metric == "endToEnd")]
        return float(hit.p99.iloc[0]) / 1000
    # DuckDB needs a glob of the data files: Spark's _SUCCESS and .crc files are not Parquet
    glob = tables / "runs" / "*" / "*" / "*.parquet"
    [(p99,)] = duckdb.execute(
        f"SELECT p99 FROM read_parquet('{glob}', hive_partitioning = true) "
        "WHERE run_id = ? AND metric = 'endToEnd'",
        [run_id],
    ).fetchall()
    return p99 / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="the -o directory of the run")
    parser.add_argument("--csv", type=Path, help="the --csv file [RESULTS/run.csv]")
    parser.add_argument("--tables", type=Path, help="the pipeline's tables (ingest --out)")
    args = parser.parse_args()

    summary = show_csv(args.csv or args.results / "run.csv")
    doc = show_json(newest_result(args.results))
    duckdb_over_csv(args.csv or args.results / "run.csv")

    figures = {
        "csv summary row": float(summary["e2e_p99_ms"]),
        "json aggregate": doc["aggregatedEndToEndLatency99pct"],
        "json histogram": p99_from_histogram(doc),
    }
    if args.tables:
        figures["pipeline runs table"] = runs_table_p99(args.tables, doc["run"]["runId"])
    for source, p99 in figures.items():
        print(f"e2e p99 from the {source}: {p99:.3f} ms")
    # the CSV and the JSON round to µs; every source reads the same histogram
    agree = max(figures.values()) - min(figures.values()) < 0.0015
    print("agree" if agree else "DISAGREE", f"({len(figures)} sources)")
    sys.exit(0 if agree else 1)


if __name__ == "__main__":
    main()
