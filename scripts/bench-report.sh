#!/usr/bin/env bash
# report-wasm's size and speed (its targets: docs/PERFORMANCE.md; a committed benchmark, not a test):
#   * the module's size, raw and gzipped (target: <= 1.5 MB gzipped);
#   * rendering a 10,000-request result (4 benchmarks x 2,500 requests of 128 tokens: every
#     table and chart), unsigned and signed, in wasmtime (`runner report`, release build; its
#     log gives compile_ms and render_ms, both for bytes -> files) and in Node through the
#     wasm-bindgen glue (target: <= 100 ms each). Node also splits loading (parse, signature,
#     every summary recomputed from the raw records) from rendering a loaded document.
# Usage: scripts/bench-report.sh [RUNS]   (needs build/wasm from scripts/build-wasm.sh)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-5}
wasm=$root/build/wasm/report_wasm_bg.wasm
[ -f "$wasm" ] || { echo "no $wasm: run scripts/build-wasm.sh first" >&2; exit 1; }
release_build -p runner
runner=$root/target/release/runner
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "== module: $(stat -c %s "$wasm") bytes, $(gzip -9 -c "$wasm" | wc -c) gzipped"
RUST_LOG=warn "$runner" synth --no-sign --out "$tmp/10k.json" --requests 2500 --output-tokens 128
RUST_LOG=warn "$runner" keygen "$tmp/bench" >/dev/null
RUST_LOG=warn "$runner" trust --keys "$tmp/keys.json" "$tmp/bench.pub" >/dev/null
RUST_LOG=warn "$runner" synth --key "$tmp/bench.key" --out "$tmp/10k-signed.json" --requests 2500 --output-tokens 128
for doc in 10k 10k-signed; do
  keys=(); [ "$doc" = 10k-signed ] && keys=(--keys "$tmp/keys.json")
  echo "== $doc.json: $(stat -c %s "$tmp/$doc.json") bytes, 10,000 requests"
  for i in $(seq 1 "$runs"); do
    RUST_LOG=info "$runner" report "$tmp/$doc.json" "${keys[@]}" --module "$wasm" --out "$tmp/out-$i" 2>&1 >/dev/null \
      | grep -o 'compile_ms=[0-9]* render_ms=[0-9]*' | sed 's/^/wasmtime: /'
  done
  node "$root/scripts/bench-report.mjs" "$tmp/$doc.json" $((runs * 4)) ${keys[1]:-}
done
echo "== natively, split: reading and verifying the document vs rendering its tables and charts"
cargo run -q --release -p report --example render_timing --manifest-path "$root/Cargo.toml" -- "$tmp/10k.json" "$runs"
