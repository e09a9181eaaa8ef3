#!/usr/bin/env bash
# What each document of scripts/hostile-documents.py costs a reader: wall time and peak
# memory of `runner report` (the report module in wasmtime) and of `runner verify
# --allow-unsigned` (native), each with the first two lines of what it said. A benchmark, not a
# test (runner/tests/it/hostile_documents.rs checks the errors); figures go to
# docs/PERFORMANCE.md.
#
#   scripts/bench-hostile.sh [--large]     --large adds the two documents of ~0.5–0.8 GB
#
# RUNNER_BIN=… measures that runner instead of building this checkout's.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${RUNNER_BIN:-}" ]; then
  release_build -p runner
fi
runner=${RUNNER_BIN:-$root/target/release/runner}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The base: a small unsigned result of synthetic records.
"$runner" synth --no-sign --requests 2 --output-tokens 4 --out "$tmp/base.json" >/dev/null
"$runner" keygen "$tmp/lab" >/dev/null 2>&1
python3 "$root/scripts/hostile-documents.py" "$tmp/base.json" "$tmp/docs" "$@"

measure() { # LABEL ARGS…: one line, "LABEL: S s, M MB: what it said"
  local label=$1
  shift
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$runner" "$@" >"$tmp/out" 2>&1 || true
  read -r secs kb < <(tail -1 "$tmp/time") # after "Command exited with …", if it did
  local said
  said=$(grep -v -E '^\s*$| INFO ' "$tmp/out" | head -2 | tr -s ' \n' ' ' | cut -c1-200 || true)
  echo "  $label: $secs s, $((kb / 1024)) MB: $said"
}

cd "$tmp/docs"
for doc in *.json; do
  echo "$doc ($(du -h --apparent-size "$doc" | cut -f1))"
  measure report report "$doc" --out "$tmp/out-$doc"
  measure verify verify "$doc" --allow-unsigned --key "$tmp/lab.pub"
  rm -rf "$tmp/out-$doc"
done
