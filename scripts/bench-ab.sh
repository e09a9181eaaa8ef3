#!/usr/bin/env bash
# Two builds of provebench, interleaved on one 10,000-request result each (the
# `scripts/bench-report.sh` document: 4 benchmarks x 2,500 requests of 128 tokens, from each
# build's own `runner synth`, so each reads what it writes): a round runs, for A then B (B then A
# every other round, so that neither always runs first),
#   * `runner report` in wasmtime (its log's render_ms: bytes -> files, verification included),
#   * `runner verify` (wall ms: parse, signature, every summary recomputed natively),
#   * Node through the wasm-bindgen glue (scripts/bench-report.mjs: load, render).
# Interleaving keeps the VM's swings out of the comparison (docs/PERFORMANCE.md).
# Usage: scripts/bench-ab.sh RUNNER_A WASM_DIR_A RUNNER_B WASM_DIR_B [ROUNDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 4 ] || { sed -n 2,10p "$0" >&2; exit 2; }
runner=("$(realpath "$1")" "$(realpath "$3")"); wasm=("$(realpath "$2")" "$(realpath "$4")"); rounds=${5:-5}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for s in 0 1; do
  RUST_LOG=warn "${runner[$s]}" keygen "$tmp/k$s" >/dev/null
  RUST_LOG=warn "${runner[$s]}" trust --keys "$tmp/keys$s.json" "$tmp/k$s.pub" >/dev/null
  RUST_LOG=warn "${runner[$s]}" synth --key "$tmp/k$s.key" --out "$tmp/doc$s.json" --requests 2500 --output-tokens 128
  echo "${s/0/A}${s/1/B}: $(stat -c %s "$tmp/doc$s.json") bytes, module $(sha256sum "${wasm[$s]}/report_wasm_bg.wasm" | cut -c1-12)"
done
ms() { date +%s%N; }
for i in $(seq 1 "$rounds"); do
  order="0 1"; [ $((i % 2)) = 0 ] && order="1 0"   # neither side always runs first
  for s in $order; do
    side=$([ $s = 0 ] && echo A || echo B)
    render=$(RUST_LOG=info "${runner[$s]}" report "$tmp/doc$s.json" --keys "$tmp/keys$s.json" \
      --module "${wasm[$s]}/report_wasm_bg.wasm" --out "$tmp/out" 2>&1 >/dev/null | grep -o 'render_ms=[0-9]*')
    t0=$(ms); "${runner[$s]}" verify --keys "$tmp/keys$s.json" "$tmp/doc$s.json" >/dev/null; t1=$(ms)
    node=$(WASM_PKG="${wasm[$s]}" node "$root/scripts/bench-report.mjs" "$tmp/doc$s.json" 8 "$tmp/keys$s.json" \
      | sed -n 's/^node: \(load\|render loaded\|bytes -> report\) ms .*median of the later half \([0-9.]*\).*/\1=\2/p' | tr '\n' ' ')
    echo "round $i $side: wasmtime $render, verify_ms=$(( (t1 - t0) / 1000000 )), node (medians) $node"
  done
done
