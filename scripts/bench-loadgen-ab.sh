#!/usr/bin/env bash
# Two builds of the runner, interleaved against one simulator that knows its own latency
# (no noise: TTFT 50 ms, 8 gaps of 10 ms), to see whether a change to the load generator's
# hot path (scheduler, client, journal) moves what it measures. Each round runs, for A then B
# (B then A every other round, so that neither always runs first):
#   * closed loop: concurrent 16, 400 requests;
#   * open loop: constant 100 req/s, 400 requests (the pacing loop);
# and prints the median TTFT's excess over the simulator's 50 ms (client and loopback
# overhead, µs) and the median lateness of sends in the open loop (sent − scheduled, µs).
# Usage: scripts/bench-loadgen-ab.sh RUNNER_A RUNNER_B [ROUNDS]
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,10p "$0" >&2; exit 2; }
runner=("$(realpath "$1")" "$(realpath "$2")"); rounds=${3:-6}
tmp=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"
RUST_LOG=warn start_sim "${runner[0]}" --ttft-ms 50 --itl-ms 10 --max-batch 256
measure() { # RUNNER OUT PROFILE_ARGS…
  local bin=$1 out=$2; shift 2
  rm -f "$out" "$out.journal.jsonl"
  RUST_LOG=warn "$bin" run --target "$SIM_URL" --no-sign --out "$out" --max-requests 400 \
    --warmup-requests 20 --data prompt_tokens=16,output_tokens=8 "$@" >/dev/null
  python3 - "$out" <<'PY'
import base64, json, statistics, sys
s = json.loads(base64.b64decode(json.load(open(sys.argv[1]))["payload"]))
r = s["predicate"]["benchmarks"][0]["records"]
idx = [i for i, p in enumerate(r["phase"]) if p == "measured" and r["first_token_us"][i] is not None]
ttft = statistics.median(r["first_token_us"][i] - r["scheduled_us"][i] for i in idx) - 50_000
late = statistics.median(r["sent_us"][i] - r["scheduled_us"][i] for i in idx)
print(f"ttft_excess_us={ttft:.0f} send_late_us={late:.0f}", end=" ")
PY
}
for i in $(seq 1 "$rounds"); do
  order="0 1"; [ $((i % 2)) = 0 ] && order="1 0"   # neither side always runs first
  for s in $order; do
    side=$([ $s = 0 ] && echo A || echo B)
    echo -n "round $i $side: closed "
    measure "${runner[$s]}" "$tmp/c$s.json" --profile concurrent --concurrency 16
    echo -n "| open "
    measure "${runner[$s]}" "$tmp/o$s.json" --profile constant --rate 100
    echo
  done
done
