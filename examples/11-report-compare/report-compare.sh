#!/usr/bin/env bash
# An HTML report of two runs side by side, and `loadgen compare` as a CI gate. One command
# runs the same workload on two drivers (a baseline, and one whose consumers poll slowly, a
# stand-in for a build that regressed); then the report overlays them and compare judges the
# second against the first. About 10 s.
#
#   examples/11-report-compare/report-compare.sh [OUT_DIR]     # OUT_DIR: default results/compare
#
# Look at: OUT_DIR/report.html (open it in a browser: setup, verdicts, a summary table with the
# change of each figure against the first run, throughput and latency over time, the latency
# distribution on a "nines" axis); the first compare (a run against itself) exits 0; the second
# prints each metric's delta and "REGRESSION" rows for the end-to-end percentiles, and exits 1,
# which is this script's exit code too: the gate a CI job would fail on.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-results/compare}"

loadgen run -q --no-report --stats-interval 1s -o "$out" \
  -d "$repo/configs/drivers/memory.yaml" -d "$here/slow-poll.yaml" "$here/workload.yaml"

# Result files are named <workload>-<driver>-<UTC time>.json; take the newest of each.
baseline="$(ls -t "$out"/compare-Memory-2*.json | head -n 1)"
candidate="$(ls -t "$out"/compare-Memory-slow-poll-*.json | head -n 1)"

loadgen report "$baseline" "$candidate" -o "$out/report.html"
echo "== a run against itself"
loadgen compare "$baseline" "$baseline"
echo "== the slow-poll run against the baseline"
loadgen compare "$baseline" "$candidate" --max-regression 10%
