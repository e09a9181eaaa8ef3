#!/usr/bin/env bash
# What the modern workloads cost the runner (the committed benchmark for their targets in
# docs/PERFORMANCE.md; not a test):
#   1. Building the prompts of a 100,000-request Mooncake-style trace (loadgen's trace_build
#      example): read and check the file, prepare every request. Target: <= 2 s.
#   2. Pacing of trace replay at 1,000 req/s against Poisson at 1,000 req/s, interleaved A/B
#      (ROUNDS of each, default 3), against the simulator on loopback: pacing_p50_us and
#      pacing_p99_us (actual minus scheduled send) from the runner's "benchmark done" lines.
#      Target: trace replay as good as Poisson. The trace has 5,000 requests with Poisson
#      timestamps (fractional ms), each one 16-token block of 8 shared ones.
# Pins the runner and the simulator to CPUs of their own when taskset is there, as
# scripts/bench-runner.sh does. Usage: scripts/bench-workloads.sh [ROUNDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/lib.sh"
rounds=${1:-3}
release_build -p runner
runner=$root/target/release/runner
tmp=$(mktemp -d)
on_cpu0=(); on_cpu1=()
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ]; then
  on_cpu0=(taskset -c "$(( $(nproc) - 2 ))"); on_cpu1=(taskset -c "$(( $(nproc) - 1 ))")
fi
trap 'kill ${sim_pid:-} 2>/dev/null || true; rm -rf "$tmp"' EXIT

echo "== building a 100,000-request trace's prompts"
cargo run -q --release -p loadgen --example trace_build --manifest-path "$root/Cargo.toml" 100000

python3 - "$tmp/pacing.jsonl" <<'PY'
import random, sys
random.seed(7)
t = 0.0
with open(sys.argv[1], "w") as f:
    for i in range(5000):
        f.write(f'{{"timestamp": {t:.4f}, "input_length": 16, "output_length": 4, "hash_ids": [{i % 8}]}}\n')
        t += random.expovariate(1.0)  # ms: 1,000 req/s
PY
p=$(free_port)
RUST_LOG=warn "${on_cpu1[@]}" "$runner" sim --host 127.0.0.1 --port "$p" --ttft-ms 2 --itl-ms 1 --max-batch 256 >/dev/null &
sim_pid=$!
wait_listening "$p" "$sim_pid"
for round in $(seq 1 "$rounds"); do
  echo "== round $round: trace replay at 1,000 req/s"
  "${on_cpu0[@]}" "$runner" run --target "http://127.0.0.1:$p" --trace "$tmp/pacing.jsonl" \
    --no-sign --out "$tmp/trace-$round.json" 2>&1 >/dev/null | grep "benchmark done"
  echo "== round $round: Poisson at 1,000 req/s"
  "${on_cpu0[@]}" "$runner" run --target "http://127.0.0.1:$p" --profile poisson --rate 1000 --max-requests 5000 \
    --data prompt_tokens=16,output_tokens=4 --no-sign --out "$tmp/poisson-$round.json" 2>&1 >/dev/null | grep "benchmark done"
done
