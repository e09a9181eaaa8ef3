#!/usr/bin/env bash
# The runner's own cost and pacing, measured against the simulator on loopback (the committed
# benchmark for its targets in docs/PERFORMANCE.md; not a test). Prints the runner's "benchmark done" lines:
#   1. CPU per streamed token: 16 concurrent streams of 256 tokens, the simulator streaming as fast
#      as it can (--itl-ms 0). cpu_us_per_token = the runner process's user+system CPU time over
#      the benchmark / tokens received. Target: <= 2 us.
#   2. Pacing at 1,000 req/s Poisson: pacing_p50_us / pacing_p99_us = actual minus scheduled send.
#      Target: p99 <= 100 us. steal_share = CPU time the hypervisor took from this machine during
#      the benchmark (/proc/stat); on a VM, read the pacing figures beside it.
#   3. CPU per token with tokens spaced 1 ms apart: each request on its own rhythm (every token
#      its own read and wake-up: the client's worst case), then with the simulator's decode steps
#      (all running requests' tokens leave together, as a continuous-batching engine's do).
#   4. Case 1 again through reqwest (--http-client reqwest): what the lean HTTP/1.1 reader saves.
#   5. CPU per token when paced as engines pace them: 16 streams with tokens 2 ms apart, and 256
#      streams with tokens 20 ms apart (target: <= 4 us a token in both).
# With taskset available, the simulator runs on CPU 1 and the runner on CPU 0, so that neither
# measurement includes the other's work. Usage: scripts/bench-runner.sh [REQUESTS]
# RUNNER_BIN=… measures that runner instead of building this checkout's; SIM_BIN=… serves the
# simulator from another binary (an A/B of two runners keeps one simulator for both).
# RUNNER_FLAGS=… adds flags to every run: `--gpu-sample-ms 0 --metrics-url none` turns host
# telemetry off, for an A/B of its cost (PROVEBENCH_NVML_LIB may point at a fake NVML).
# BENCH_SMOKE=1 runs every case at a tenth of its size or less (one round of each concurrency,
# 1,000 paced requests): a test that the script and its cases still run, not a figure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/lib.sh"
requests=${1:-400}
# Cases 2-5's sizes: PACED requests at 1,000 req/s, then ROUNDS rounds of 16 streams and
# WIDE_ROUNDS of 256.
paced=5000 rounds=10 wide_rounds=3
if [ "${BENCH_SMOKE:-0}" = 1 ]; then paced=1000 rounds=1 wide_rounds=1; fi
if [ -z "${RUNNER_BIN:-}" ]; then
  release_build -p runner
fi
runner=${RUNNER_BIN:-$root/target/release/runner}
sim=${SIM_BIN:-$runner}
tmp=$(mktemp -d)
# Command prefixes that pin to a CPU. Arrays, not a shell function: a backgrounded function
# runs in a subshell, and killing that subshell's pid would leave the simulator running.
# The runner and the simulator each pinned to a CPU of their own: by default the two
# highest-numbered, since CPU 0 usually takes most of a host's interrupts and housekeeping (on a
# 2-vCPU machine that is CPUs 0 and 1, as before). A precaution, not a cure: on a lent 16-vCPU
# H100 host, pacing p99 at 1,000 req/s ranged 37-293 us over 17 runs wherever pinned (0/1, 4/5,
# 8/9, 14/15), p50 10-21 us, with steal under 2 %. BENCH_CPUS="RUNNER SIM" picks others.
on_cpu0=(); on_cpu1=()
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ]; then
  read -r runner_cpu sim_cpu <<<"${BENCH_CPUS:-$(( $(nproc) - 2 )) $(( $(nproc) - 1 ))}"
  on_cpu0=(taskset -c "$runner_cpu"); on_cpu1=(taskset -c "$sim_cpu")
  echo "== runner on CPU $runner_cpu, simulator on CPU $sim_cpu (BENCH_CPUS to change)"
fi
serve() { # serve SIM-FLAGS...: the simulator on a free port, which it leaves in $p
  p=$(free_port)
  RUST_LOG=warn "${on_cpu1[@]}" "$sim" sim --host 127.0.0.1 --port "$p" "$@" >/dev/null &
  sim_pid=$!
  wait_listening "$p" "$sim_pid" || { echo "the simulator did not start" >&2; exit 1; }
}
bench() { # bench NAME RUNNER-FLAGS...: one run against the simulator `serve` started, which it then stops
  local name=$1; shift
  "${on_cpu0[@]}" "$runner" run --target "http://127.0.0.1:$p" "$@" --no-sign --out "$tmp/$name.json" \
    ${RUNNER_FLAGS:-} 2>&1 >/dev/null | grep "benchmark done"
  kill "$sim_pid"; wait "$sim_pid" 2>/dev/null || true
}
trap 'kill ${sim_pid:-} 2>/dev/null || true; rm -rf "$tmp"' EXIT

serve --ttft-ms 0 --itl-ms 0 --max-batch 64
echo "== CPU per streamed token: 16 streams x 256 tokens, $requests requests, simulator at full speed"
bench cpu --profile concurrent --concurrency 16 --max-requests "$requests" --data prompt_tokens=16,output_tokens=256

serve --ttft-ms 2 --itl-ms 1 --max-batch 256
echo "== pacing: Poisson 1000 req/s, $paced requests of 4 tokens"
bench pacing --profile poisson --rate 1000 --max-requests "$paced" --data prompt_tokens=16,output_tokens=4

serve --ttft-ms 20 --itl-ms 1 --itl-growth 0 --max-batch 64
echo "== CPU per streamed token with tokens spaced 1 ms apart (each its own read and wake-up): 16 streams x 256 tokens"
bench spaced --profile concurrent --concurrency 16 --max-requests $((16 * rounds)) --data prompt_tokens=16,output_tokens=256

serve --ttft-ms 20 --itl-ms 1 --itl-growth 0 --max-batch 64 --decode-steps
echo "== the same with decode steps (16 streams' tokens leave together each 1 ms, as an engine's batch does)"
bench stepped --profile concurrent --concurrency 16 --max-requests $((16 * rounds)) --data prompt_tokens=16,output_tokens=256

serve --ttft-ms 0 --itl-ms 0 --max-batch 64
echo "== case 1 through reqwest (--http-client reqwest)"
bench cpu-reqwest --profile concurrent --concurrency 16 --max-requests "$requests" \
  --data prompt_tokens=16,output_tokens=256 --http-client reqwest

serve --ttft-ms 2 --itl-ms 2 --itl-growth 0 --max-batch 64
echo "== CPU per streamed token, paced: 16 streams x 256 tokens 2 ms apart"
bench paced-16 --profile concurrent --concurrency 16 --max-requests $((16 * rounds)) --data prompt_tokens=16,output_tokens=256

serve --ttft-ms 20 --itl-ms 20 --itl-growth 0 --max-batch 256
echo "== CPU per streamed token, paced: 256 streams x 64 tokens 20 ms apart"
bench paced-256 --profile concurrent --concurrency 256 --max-requests $((256 * wide_rounds)) --data prompt_tokens=16,output_tokens=64
