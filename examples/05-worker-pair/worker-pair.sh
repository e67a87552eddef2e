#!/usr/bin/env bash
# A worker pair: two `loadgen worker` processes on 127.0.0.1 and a coordinator
# (`loadgen run --workers URL,URL`) that drives both and writes one exactly merged result.
# On separate client machines it is the same, with --bind HOST:PORT on each (a token is then
# required) and the workers' URLs given to the coordinator. About 6 s on the memory driver.
#
#   examples/05-worker-pair/worker-pair.sh [OUT_DIR]        # OUT_DIR: default results/worker-pair
#
# Look at: each worker's "loadgen worker listening on URL", then the coordinator's lines and
# its result. In the JSON: run.workers lists both URLs (the first one created the topics),
# run.workerTotals gives each worker's sent/received (they add up to totalMessagesSent and
# totalMessagesReceived), run.clockOffsetsMs the measured offset of each worker's clock.
# Use `-d YOUR-KAFKA.yaml` and your own workload in the last command for a real broker.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-results/worker-pair}"

# One secret for the workers and the coordinator; loadgen never prints or stores it.
LOADGEN_TOKEN="${LOADGEN_TOKEN:-$(python3 -c 'import secrets; print(secrets.token_urlsafe(24))')}"
export LOADGEN_TOKEN

logs="$(mktemp -d)"
pids=()
stop_workers() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$logs"
}
trap stop_workers EXIT

# Port 0: each worker picks a free port and prints its URL once it listens.
for name in worker-1 worker-2; do
  loadgen worker --bind 127.0.0.1:0 >"$logs/$name.log" 2>&1 &
  pids+=("$!")
done

worker_url() {  # the URL a worker announced, waiting up to 30 s for it
  local log="$1" url=""
  for _ in $(seq 300); do
    url="$(sed -n 's/^loadgen worker listening on //p' "$log")"
    if [ -n "$url" ]; then echo "$url"; return 0; fi
    sleep 0.1
  done
  echo "no worker URL in $log:" >&2
  cat "$log" >&2
  return 1
}
url1="$(worker_url "$logs/worker-1.log")"
url2="$(worker_url "$logs/worker-2.log")"
echo "workers: $url1 $url2"

loadgen run --workers "$url1,$url2" \
  -d "$repo/configs/drivers/memory.yaml" "$here/workload.yaml" \
  --stats-interval 1s -o "$out"
