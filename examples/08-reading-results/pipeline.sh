#!/usr/bin/env bash
# The Spark pipeline's tables: a run lands its intervals, `loadgen pipeline ingest --once`
# merges them into Parquet tables, `loadgen pipeline query` reads them with Spark SQL, and
# read_results.py reads the same tables with DuckDB (or pyarrow). Needs the [spark] extra and a
# Java 17 runtime; each Spark command starts a JVM: about a minute in all on 2 cores.
#
#   examples/08-reading-results/pipeline.sh [OUT_DIR]        # OUT_DIR: default results/pipeline
#
# Look at: the "runs" report (one row per run: workload, driver, target and measured rates,
# e2e p50/p99/p99.9/max in ms, complete), the SQL query's JSON lines (the run's end-to-end p99
# per interval; the tables keep latencies in µs, hence the / 1000), and the
# last lines of read_results.py: the pipeline's runs table gives the same e2e p99 as the
# result JSON and the CSV ("agree").
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-results/pipeline}"

loadgen run memory:// --rate 2k --duration 2s --stats-interval 1s \
  --pipeline "$out/landing" --csv "$out/results/run.csv" -o "$out/results" --no-report
loadgen pipeline ingest "$out/landing" --out "$out/tables" --once
loadgen pipeline query "$out/tables" --report runs
loadgen pipeline query "$out/tables" --json \
  "SELECT run_id, seq, sent, round(p99 / 1000, 3) AS p99_ms FROM intervals
   WHERE metric = 'endToEnd' AND NOT warmup ORDER BY run_id, seq"
"${PYTHON:-python3}" "$here/read_results.py" "$out/results" --tables "$out/tables"
