#!/usr/bin/env bash
# The client's ceiling on this host: the highest open-loop rate the runner sustains with send
# lateness p99 <= 1 ms (pacing_p99_us: actual minus scheduled send), against the simulator on
# the same host answering one token at once (--ttft-ms 0 --itl-ms 0). Rates rise by half from
# START (1,000) until a rate misses the lateness target, a request fails, or MAX (64,000) is
# passed; each rate runs SECONDS (5) of requests at a constant rate, after a quarter second of
# warm-up requests. An open loop spins before each send, so its CPU share says nothing of its
# cost: the runner's CPU a request is measured apart, by a closed loop of 64 concurrent
# one-token requests at full speed (cpu_us_per_token: one token a request). The runner is pinned to the highest-numbered
# CPU, the simulator to all the others (one CPU each on a 2-vCPU machine). Not a test: a
# committed benchmark (docs/PERFORMANCE.md). Prints one line a rate, then the ceiling.
# Usage: scripts/bench-client-ceiling.sh [START] [MAX] [SECONDS]; RUNNER_BIN=… measures that runner.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/lib.sh"
start=${1:-1000}; max=${2:-64000}; seconds=${3:-5}
if [ -z "${RUNNER_BIN:-}" ]; then
  release_build -p runner
fi
runner=${RUNNER_BIN:-$root/target/release/runner}
scratch_dir; tmp=$SCRATCH
n=$(nproc)
on_runner=(); on_sim=()
if command -v taskset >/dev/null 2>&1 && [ "$n" -ge 2 ]; then
  on_runner=(taskset -c "$((n - 1))"); on_sim=(taskset -c "0-$((n - 2))")
fi
best=; best_cpu=
rate=$start
while [ "$rate" -le "$max" ]; do
  p=$(free_port)
  RUST_LOG=warn "${on_sim[@]}" "$runner" sim --host 127.0.0.1 --port "$p" --ttft-ms 0 --itl-ms 0 \
    --max-batch 4096 >/dev/null &
  SIM_PID=$!
  wait_listening "$p" "$SIM_PID" || { echo "the simulator did not start" >&2; exit 1; }
  requests=$((rate * seconds))
  rm -f "$tmp/r.json" "$tmp/r.json.journal.jsonl"
  out=$("${on_runner[@]}" "$runner" run --target "http://127.0.0.1:$p" --profile constant \
    --rate "$rate" --max-requests "$requests" --warmup-requests "$((rate / 4))" --max-concurrency 4096 \
    --data prompt_tokens=16,output_tokens=1 --no-sign --out "$tmp/r.json" --fail-on never 2>&1 >/dev/null || true)
  kill "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=
  line=$(grep "benchmark done" <<<"$out" || true)
  p99=$(figure pacing_p99_us "$line"); cpu=$(figure cpu_us_per_token "$line")
  failed=$(python3 -c 'import json,base64,sys
d=json.loads(base64.b64decode(json.load(open(sys.argv[1]))["payload"]))
print(sum(1 for e in d["predicate"]["benchmarks"][0]["records"]["error"] if e))' "$tmp/r.json" 2>/dev/null || echo "?")
  echo "rate $rate req/s: $requests requests, pacing p99 ${p99:-?} us, failed $failed, steal $(figure steal_share "$line")"
  if [ -z "$p99" ] || [ "$failed" != 0 ] || [ "${p99%.*}" -gt 1000 ]; then
    break
  fi
  best=$rate
  rate=$((rate * 3 / 2))
done
p=$(free_port)
RUST_LOG=warn "${on_sim[@]}" "$runner" sim --host 127.0.0.1 --port "$p" --ttft-ms 0 --itl-ms 0 \
  --max-batch 4096 >/dev/null &
SIM_PID=$!
wait_listening "$p" "$SIM_PID" || { echo "the simulator did not start" >&2; exit 1; }
rm -f "$tmp/r.json" "$tmp/r.json.journal.jsonl"
line=$("${on_runner[@]}" "$runner" run --target "http://127.0.0.1:$p" --profile concurrent \
  --concurrency 64 --max-requests 20000 --data prompt_tokens=16,output_tokens=1 --no-sign \
  --out "$tmp/r.json" 2>&1 >/dev/null | grep "benchmark done" || true)
kill "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=
echo "closed loop: 64 concurrent one-token requests, CPU $(figure cpu_us_per_token "$line") us a request"
echo "ceiling: ${best:-below $start} req/s with pacing p99 <= 1 ms, $(nproc) CPUs"
