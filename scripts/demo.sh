#!/usr/bin/env bash
# The demo: the built-in simulator on loopback, a sweep and a small input x output grid against it,
# both signed with a demo key, then verified natively and inside the wasm module the site uses.
# Usage: scripts/demo.sh RUNNER_BIN OUT_DIR
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

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$runner" sim --host 127.0.0.1 --port "$port" >/dev/null &
sim=$!
trap 'kill $sim 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break; sleep 0.1; done
target=http://127.0.0.1:$port
stamp=$(date -u +%Y%m%dT%H%M%SZ)

echo "== sweep against the simulator ($target): synchronous, throughput, 4 rates between"
"$runner" run --target "$target" --profile sweep --sweep-rates 4 --max-requests 20 \
  --data prompt_tokens=256,output_tokens=32 --key "$out/demo.key" --out "$out/sweep-$stamp.json"
echo "== grid: input 128,512 x output 32,64, synchronous"
"$runner" run --target "$target" --grid input=128,512 output=32,64 --max-requests 8 \
  --key "$out/demo.key" --out "$out/grid-$stamp.json"

for f in "$out/sweep-$stamp.json" "$out/grid-$stamp.json"; do
  echo "== runner verify $f"
  "$runner" verify "$f" --keys "$out/keys.json"
  node "$root/scripts/verify-wasm.mjs" "$f" "$out/keys.json"
done
echo "== done: results in $out (signed; journals beside them), module sha256 $(cut -d' ' -f1 "$root/build/wasm/report_wasm_bg.wasm.sha256")"
