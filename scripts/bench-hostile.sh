#!/usr/bin/env bash
# What each document of scripts/hostile-documents.py costs a reader: wall time and peak
# memory of `runner report` (the report module in wasmtime) and of `runner verify
# --allow-unsigned` (native), each with the first line of what it said. A benchmark, not a
# test (runner/tests/hostile_documents.rs checks the errors); figures go to
# docs/PERFORMANCE.md.
#
#   scripts/bench-hostile.sh [--large]     --large adds the two documents of ~0.5–0.8 GB
#
# RUNNER_BIN=… measures that runner instead of building this checkout's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${RUNNER_BIN:-}" ]; then
  cargo build -q --release -p runner --manifest-path "$root/Cargo.toml"
fi
runner=${RUNNER_BIN:-$root/target/release/runner}
tmp=$(mktemp -d)
sim=
cleanup() {
  [ -n "$sim" ] && kill "$sim" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# The base: a small real result, unsigned, from the simulator.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$runner" sim --host 127.0.0.1 --port "$port" --ttft-ms 5 --itl-ms 1 >/dev/null 2>&1 &
sim=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.1
done
"$runner" run --target "http://127.0.0.1:$port" --out "$tmp/base.json" --profile concurrent \
  --concurrency 2 --max-requests 2 --data prompt_tokens=16,output_tokens=8 >/dev/null 2>&1
"$runner" keygen "$tmp/lab" >/dev/null 2>&1
python3 "$root/scripts/hostile-documents.py" "$tmp/base.json" "$tmp/docs" "$@"

measure() { # LABEL ARGS…: one line, "LABEL: S s, M MB: what it said"
  local label=$1
  shift
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$runner" "$@" >"$tmp/out" 2>&1 || true
  read -r secs kb <"$tmp/time"
  local said
  said=$(grep -m1 -E 'error|FAILED|OK|wrote|not read' "$tmp/out" | cut -c1-160 || true)
  echo "  $label: $secs s, $((kb / 1024)) MB: ${said:-$(head -c 160 "$tmp/out")}"
}

cd "$tmp/docs"
for doc in *.json; do
  echo "$doc ($(du -h --apparent-size "$doc" | cut -f1))"
  measure report report "$doc" --out "$tmp/out-$doc"
  measure verify verify "$doc" --allow-unsigned --key "$tmp/lab.pub"
  rm -rf "$tmp/out-$doc"
done
