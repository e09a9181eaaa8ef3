#!/usr/bin/env bash
# A long run at a steady rate against the simulator, watching the runner itself: its resident
# memory and open file descriptors, sampled every 10 s, must stay flat, and the result must
# verify. (A benchmark, not a test: figures go to docs/PERFORMANCE.md.)
#
#   scripts/soak.sh [MINUTES] [RATE]        default: 30 minutes at 200 req/s
#
# Prints one line per sample (seconds, RSS in MiB, fds), then
#   soak: RSS A MiB after the first minute, B MiB at the end (+G %), peak P MiB; fds F..F'
# The first minute is warm-up (buffers, connection pool, thread stacks reach their size).
# RUNNER_BIN=… measures that runner instead of building this checkout's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/lib.sh"
minutes=${1:-30}
rate=${2:-200}
if [ -z "${RUNNER_BIN:-}" ]; then
  release_build -p runner
fi
runner=${RUNNER_BIN:-$root/target/release/runner}
scratch_dir
tmp=$SCRATCH

port=$(free_port)
# Capacity well above the rate (no batch limit to queue behind, no slowdown with batch size):
# the soak is about the runner, so the server must keep up.
"$runner" sim --host 127.0.0.1 --port "$port" --ttft-ms 20 --itl-ms 5 --max-batch 1024 \
  --itl-growth 0 >/dev/null 2>&1 &
SIM_PID=$!
wait_listening "$port" "$SIM_PID"
"$runner" keygen "$tmp/soak" >/dev/null 2>&1
RUST_LOG=info "$runner" run --target "http://127.0.0.1:$port" --key "$tmp/soak.key" \
  --out "$tmp/soak.json" --profile constant --rate "$rate" --max-seconds $((minutes * 60)) \
  --data prompt_tokens=64,output_tokens=32 >"$tmp/run.log" 2>&1 &
run=$!
start=$SECONDS
while kill -0 "$run" 2>/dev/null; do
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$run/status" 2>/dev/null || true)
  fds=$(ls "/proc/$run/fd" 2>/dev/null | wc -l)
  [ -n "$rss" ] && echo "$((SECONDS - start)) $((rss / 1024)) $fds" | tee -a "$tmp/samples"
  sleep 10
done
wait "$run" || { cat "$tmp/run.log"; exit 1; }
"$runner" verify "$tmp/soak.json" --key "$tmp/soak.pub"
grep -o 'requests=[0-9]* .*pacing_p99_us=[^ ]*' "$tmp/run.log" || true
python3 - "$tmp/samples" <<'EOF'
import sys
rows = [tuple(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
warm = [r for r in rows if r[0] >= 60] or rows
first, last = warm[0][1], warm[-1][1]
peak = max(r[1] for r in rows)
fds = [r[2] for r in warm]
print(f"soak: RSS {first} MiB after the first minute, {last} MiB at the end "
      f"({(last - first) / first * 100:+.1f} %), peak {peak} MiB; fds {min(fds)}..{max(fds)}")
EOF
