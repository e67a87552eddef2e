#!/usr/bin/env bash
# A latency probe for cron: runs `loadgen probe URL` with a p99 bound, appends one line per run
# to a log file, and exits non-zero on an SLO breach (1) or an unreachable broker (3), printing
# why on stderr, so cron mails you only when something is wrong. See crontab.txt beside it.
#
#   examples/07-probe-cron/probe-check.sh URL [LOG_FILE]      # LOG_FILE: default ./probe.log
#   examples/07-probe-cron/probe-check.sh memory://            # try it without a broker
#   PROBE_MAX_P99_MS=0.001 examples/07-probe-cron/probe-check.sh memory://   # see a breach
#
# Settings from the environment: PROBE_MAX_P99_MS (default 20), PROBE_DURATION (default 10s);
# LOADGEN_DRIVER=driver.yaml gives the probe a driver file's client settings (TLS, SASL).
# Look at: the log, one line per run: UTC time, URL, OK / BREACH / UNREACHABLE / ERROR, the
# end-to-end p50/p99/max in ms and sent/received; a breach also names the threshold and what
# was measured.
set -uo pipefail
url="${1:?usage: probe-check.sh URL [LOG_FILE]}"
log="${2:-probe.log}"
max_p99="${PROBE_MAX_P99_MS:-20}"
duration="${PROBE_DURATION:-10s}"

out="$(mktemp)"
trap 'rm -f "$out"' EXIT
loadgen probe "$url" --max-p99 "$max_p99" --duration "$duration" --json >"$out" 2>&1
status=$?

case "$status" in
  0) verdict=OK ;;
  1) verdict=BREACH ;;
  3) verdict=UNREACHABLE ;;
  *) verdict=ERROR ;;
esac

# The last JSON line is the probe's summary; anything else (an error message) is kept as is.
detail="$(python3 - "$out" <<'PY'
import json
import sys

lines = open(sys.argv[1]).read().splitlines()
try:
    summary = json.loads(lines[-1])
    e2e = summary["e2e_ms"]
    parts = [f"e2e_ms p50={e2e['p50']} p99={e2e['p99']} max={e2e['max']}",
             f"sent={summary['sent']} received={summary['received']}",
             *summary["breaches"]]
    print(" | ".join(parts))
except (IndexError, ValueError, KeyError, TypeError):
    print(lines[-1] if lines else "no output")
PY
)"

line="$(date -u +%Y-%m-%dT%H:%M:%SZ) $url $verdict $detail"
echo "$line" >>"$log"
if [ "$status" -ne 0 ]; then
  echo "$line" >&2
fi
exit "$status"
