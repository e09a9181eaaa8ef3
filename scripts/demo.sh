#!/usr/bin/env bash
# The demo: a demo signing key, a signed result, and its verification, natively and in
# the wasm module the site uses. Usage: scripts/demo.sh RUNNER_BIN OUT_DIR
set -euo pipefail
runner=${1:?runner binary}
out=${2:?output directory}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"

if [ ! -f "$out/demo.key" ]; then
  "$runner" keygen "$out/demo" >/dev/null
fi
# The keys file the site and `runner verify --keys` read: name, keyid, PEM, validity, revocation.
if [ ! -f "$out/keys.json" ]; then
  "$runner" trust "$out/demo.pub" --keys "$out/keys.json" --name "provebench demo key" >/dev/null
fi

echo "== a signed result from synthetic records (4 benchmarks × 200 requests × 256 tokens)"
"$runner" synth --key "$out/demo.key" --out "$out/synthetic.json" --requests 200 --output-tokens 256
echo "== runner verify"
"$runner" verify "$out/synthetic.json" --keys "$out/keys.json"
echo "== the same check inside the wasm module (Node)"
node "$root/scripts/verify-wasm.mjs" "$out/synthetic.json" "$out/keys.json"
echo "== done: $out/synthetic.json (signed), $out/keys.json (trusted keys), module $(cut -d' ' -f1 "$root/build/wasm/report_wasm_bg.wasm.sha256")"
