#!/usr/bin/env bash
# The runner's CPU per streamed token, two builds interleaved against one simulator binary
# (A's), for a change to the client's hot path: 16 streams x 256 tokens, 400 requests, the
# simulator streaming as fast as it can (case 1 of scripts/bench-runner.sh), once through the
# lean HTTP/1.1 reader (`--http-client auto`) and once through reqwest (`--http-client
# reqwest`) per round, A then B (B then A every other round: the second of a pair runs slower
# by about 0.1 µs a token here); the runner pinned to CPU 0, the simulator to CPU 1. Prints one
# line a run: round, side, client, CPU µs per token, the hypervisor's steal share.
# Usage: scripts/bench-client-ab.sh RUNNER_A RUNNER_B [ROUNDS]  (CLIENTS="auto" for one client;
# RUN_ARGS="--backend sglang" adds flags to both runs; SIM_BIN=RUNNER serves from that build's
# simulator instead of A's, e.g. B's when only B's simulator writes what B's client reads;
# SIM_ARGS="--timings" adds flags to the simulator's)
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,12p "$0" >&2; exit 2; }
runner=("$(realpath "$1")" "$(realpath "$2")"); rounds=${3:-5}
sim_bin=$(realpath "${SIM_BIN:-$1}")
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
for i in $(seq 1 "$rounds"); do
  order="0 1"; [ $((i % 2)) = 0 ] && order="1 0"   # neither side always runs first
  for s in $order; do
    side=$([ $s = 0 ] && echo A || echo B)
    for client in ${CLIENTS:-auto reqwest}; do
      p=$(free_port)
      RUST_LOG=warn taskset -c 1 "$sim_bin" sim --host 127.0.0.1 --port "$p" --ttft-ms 0 \
        --itl-ms 0 --max-batch 64 ${SIM_ARGS:-} >/dev/null &
      sim=$!
      wait_listening "$p" "$sim"
      rm -f "$tmp/r.json" "$tmp/r.json.journal.jsonl"
      line=$(taskset -c 0 "${runner[$s]}" run --target "http://127.0.0.1:$p" --profile concurrent \
        --concurrency 16 --max-requests 400 --data prompt_tokens=16,output_tokens=256 \
        --http-client "$client" ${RUN_ARGS:-} --no-sign --out "$tmp/r.json" 2>&1 >/dev/null | grep "benchmark done")
      kill "$sim"; wait "$sim" 2>/dev/null || true
      echo "round $i $side $client cpu_us_per_token=$(figure cpu_us_per_token "$line") steal_share=$(figure steal_share "$line")"
    done
  done
done
