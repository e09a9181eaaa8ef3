#!/usr/bin/env bash
# What an agentic session costs the runner (the committed benchmark for its target in
# docs/PERFORMANCE.md; not a test): the client's CPU per request of 20-turn sessions whose
# history reaches about 30,000 tokens, against single-turn requests whose prompts have the same
# mean length, interleaved A/B (ROUNDS of each, default 3), against the simulator on loopback.
# Target: an agentic turn costs at most 2× a single-turn request of its length.
#
# Two figures a run: the runner process's user + system time over the whole run (GNU time's %U
# and %S, 10 ms resolution), which counts what each workload does before its benchmark (the
# single-turn prompts are built and counted with the server's /tokenize beforehand; an agentic
# turn's prompt is written as it is sent), and the CPU of the benchmark's own window (the
# runner's cpu_us_per_token × 16 output tokens). Each run sends 20 × SESSIONS requests.
# Pins the runner and the simulator to CPUs of their own when taskset is there.
# Usage: scripts/bench-agentic.sh [ROUNDS] [SESSIONS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/lib.sh"
rounds=${1:-3}
sessions=${2:-10}
requests=$((sessions * 20))
release_build -p runner
runner=$root/target/release/runner
tmp=$(mktemp -d)
on_cpu0=(); on_cpu1=()
if command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 2 ]; then
  on_cpu0=(taskset -c "$(( $(nproc) - 2 ))"); on_cpu1=(taskset -c "$(( $(nproc) - 1 ))")
fi
trap 'kill ${sim_pid:-} 2>/dev/null || true; rm -rf "$tmp"' EXIT
p=$(free_port)
RUST_LOG=warn "${on_cpu1[@]}" "$runner" sim --host 127.0.0.1 --port "$p" --ttft-ms 1 --itl-ms 0.2 \
  --prefill-us-per-token 0 --max-batch 256 >/dev/null &
sim_pid=$!
wait_listening "$p" "$sim_pid"
# 20 turns: 1,024 shared + 16 marker + 256 task, then 16 answer + 1,500 tool result a turn:
# the last prompt 30,100 tokens, the mean 15,700.
agentic="turns=20,subagents=0,system_tokens=1024,task_tokens=256,output_tokens=16,tool_result_tokens=1500,tool_ms=0,context_tokens=40000"
mean=15700
cpu() { # the runner's user + system seconds, then its stderr's "benchmark done" line
  rm -f "$tmp/out.json" "$tmp/out.json.journal.jsonl"
  /usr/bin/time -f "%U %S" -o "$tmp/time" "${on_cpu0[@]}" "$runner" run --target "http://127.0.0.1:$p" \
    --backend openai-completions --profile concurrent --concurrency 4 --max-requests "$requests" \
    --no-sign --no-log --out "$tmp/out.json" "$@" 2>"$tmp/err" >/dev/null
  awk -v n="$requests" '{ printf "%.0f µs of CPU a request in all", ($1 + $2) * 1e6 / n }' "$tmp/time"
  # The benchmark's own window: CPU µs per output token × the 16 tokens of each request.
  grep -o 'cpu_us_per_token=Some("[0-9.]*")' "$tmp/err" | tr -dc '0-9.\n' |
    awk '{ printf ", %.0f µs while sending\n", $1 * 16 }'
}
for round in $(seq 1 "$rounds"); do
  echo "== round $round: agentic, $sessions sessions of 20 turns: $(cpu --agentic "$agentic")"
  echo "== round $round: single-turn, $requests prompts of $mean tokens: $(cpu --data "prompt_tokens=$mean,output_tokens=16")"
done
