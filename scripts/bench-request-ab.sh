#!/usr/bin/env bash
# The runner's CPU per request, two builds interleaved against one simulator binary (A's), for
# a change to the per-request path (request body, headers, response head): 64 concurrent
# one-token requests, 20,000 a run, the simulator answering at once; the runner pinned to CPU
# 1, the simulator to CPU 0; the order of A and B alternates by round, so neither always runs
# first. Prints one line a run: round, side, CPU µs a request, the hypervisor's steal share.
# Usage: scripts/bench-request-ab.sh RUNNER_A RUNNER_B [ROUNDS]
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,7p "$0" >&2; exit 2; }
runner=("$(realpath "$1")" "$(realpath "$2")"); rounds=${3:-8}
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
for i in $(seq 1 "$rounds"); do
  order="0 1"; [ $((i % 2)) = 0 ] && order="1 0"
  for s in $order; do
    p=$(free_port)
    RUST_LOG=warn taskset -c 0 "${runner[0]}" sim --host 127.0.0.1 --port "$p" --ttft-ms 0 \
      --itl-ms 0 --max-batch 4096 >/dev/null &
    sim=$!
    wait_listening "$p" "$sim"
    rm -f "$tmp/r.json" "$tmp/r.json.journal.jsonl"
    line=$(taskset -c 1 "${runner[$s]}" run --target "http://127.0.0.1:$p" --profile concurrent \
      --concurrency 64 --max-requests 20000 --data prompt_tokens=16,output_tokens=1 --no-sign \
      --out "$tmp/r.json" 2>&1 >/dev/null | grep "benchmark done")
    kill "$sim"; wait "$sim" 2>/dev/null || true
    echo "round $i $([ "$s" = 0 ] && echo A || echo B) cpu_us_per_request=$(figure cpu_us_per_token "$line") steal_share=$(figure steal_share "$line")"
  done
done
