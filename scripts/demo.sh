#!/usr/bin/env bash
# The demo: the built-in simulator on loopback, a sweep (with an accuracy check the simulator
# answers, a seeded 2 % wrongly) and a small input x output grid against it, both signed with a
# demo key, then verified natively and inside the wasm module the site uses; a second simulated
# server (a smaller batch, ITL growing faster with it, 30 % of its answers wrong) swept the same
# way, its grade under the threshold flagged; a
# report of the first server's results and a diff of the two servers, rendered by report-wasm's
# module in wasmtime; a result measured on a real H100 by the GPU proof, verified and reported with
# its power charts; the published seed tables imported and seed 004's sweeps compared; and a
# static site of all of it, signed (its manifest and the module's provenance) and verified.
# Usage: scripts/demo.sh RUNNER_BIN OUT_DIR
set -euo pipefail
runner=${1:?runner binary}
out=${2:?output directory}
root=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/lib.sh"
mkdir -p "$out"

if [ ! -f "$out/demo.key" ]; then
  "$runner" keygen "$out/demo" >/dev/null
fi
# The keys file the site and `runner verify --keys` read: name, keyid, PEM, validity, revocation.
if [ ! -f "$out/keys.json" ]; then
  "$runner" trust "$out/demo.pub" --keys "$out/keys.json" --name "provebench demo key" >/dev/null
fi

# A result measured on a real H100 by the GPU proof (scripts/gpu-proof.sh), kept under its own key.
h100=$root/tests/fixtures/gpu-proof/h100-2026-11-27
if ! grep -q "provebench GPU proof (H100" "$out/keys.json"; then
  "$runner" trust "$h100/proof.pub" --keys "$out/keys.json" --name "provebench GPU proof (H100, 2026-11-27)" >/dev/null
fi

sims=()
trap 'kill ${sims[@]} 2>/dev/null || true' EXIT
serve() { # serve SIM-FLAGS... -> prints the base URL
  local port
  port=$(free_port)
  "$runner" sim --host 127.0.0.1 --port "$port" "$@" >/dev/null &
  sims+=($!)
  wait_listening "$port" "${sims[-1]}"
  target=http://127.0.0.1:$port
}
# It says the prompt tokens its prefix cache served in OpenAI usage, as vLLM does with
# --enable-prompt-tokens-details.
serve --wrong-answers 0.02 --enable-prompt-tokens-details
stamp=$(date -u +%Y%m%dT%H%M%SZ)
# An accuracy check before each sweep: 50 seeded arithmetic questions, at least 90 % right.
accuracy=(--accuracy builtin:arithmetic:50 --accuracy-min 0.9)

echo "== sweep against the simulator ($target): an accuracy check, then synchronous, throughput, 4 rates between"
"$runner" run --target "$target" --profile sweep --sweep-rates 4 --max-requests 20 "${accuracy[@]}" \
  --data prompt_tokens=256,output_tokens=32 --key "$out/demo.key" --out "$out/sweep-$stamp.json"
echo "== grid: input 128,512 x output 32,64, synchronous"
"$runner" run --target "$target" --grid input=128,512 output=32,64 --max-requests 8 \
  --key "$out/demo.key" --out "$out/grid-$stamp.json"

echo "== agentic sessions: 8 turns of a main agent, 2 subagents every 3 turns, tool results after 20 ms"
"$runner" run --target "$target" --backend openai-chat --profile concurrent --concurrency 4 --max-requests 64 \
  --agentic turns=8,subagents=2,spawn_every=3,subagent_turns=2,output_tokens=32,tool_ms=20 \
  --key "$out/demo.key" --out "$out/agentic-$stamp.json"

serve --speculative 3 --acceptance 0.8,0.6,0.4 --metrics-as sglang
echo "== speculative decoding on a server that says it is SGLang ($target): 3 drafts a step, on real text"
# The runner asks its OpenAI API for each request's drafts, as SGLang's recipe says
# (return_spec_tokens_details); the result gives the acceptance at each draft position.
"$runner" run --target "$target" --backend openai-chat --profile concurrent --concurrency 4 --max-requests 60 \
  --data real-text --data-output-tokens 32 --key "$out/demo.key" --out "$out/speculative-$stamp.json"

for f in "$out/sweep-$stamp.json" "$out/grid-$stamp.json" "$out/agentic-$stamp.json" "$out/speculative-$stamp.json"; do
  echo "== runner verify $f"
  "$runner" verify "$f" --keys "$out/keys.json"
  node "$root/scripts/verify-wasm.mjs" "$f" "$out/keys.json"
done
serve --max-batch 8 --itl-growth 0.2 --wrong-answers 0.3
echo "== the same sweep against a second server ($target): batch of 8, ITL growing faster, 30 % of answers wrong"
# Its grade falls under --accuracy-min: the result is written and flagged (--fail-on never:
# the demo goes on; by default the run would exit 8).
"$runner" run --target "$target" --profile sweep --sweep-rates 4 --max-requests 20 "${accuracy[@]}" --fail-on never \
  --data prompt_tokens=256,output_tokens=32 --key "$out/demo.key" --out "$out/sweep-small-batch-$stamp.json"

echo "== report (report-wasm in wasmtime) -> $out/report-$stamp/"
"$runner" report "$out/sweep-$stamp.json" "$out/grid-$stamp.json" "$out/agentic-$stamp.json" "$out/speculative-$stamp.json" \
  --keys "$out/keys.json" --out "$out/report-$stamp"
echo "== diff: second server against the first -> $out/diff-$stamp/"
"$runner" diff "$out/sweep-$stamp.json" "$out/sweep-small-batch-$stamp.json" --keys "$out/keys.json" --out "$out/diff-$stamp"
echo "== a real H100: llama.cpp (Vulkan) serving a random-weight 1.2 B model, with NVML power -> $out/report-h100/"
cp "$h100/result.json" "$out/h100-llama.cpp-gpu-proof.json"
"$runner" verify "$out/h100-llama.cpp-gpu-proof.json" --keys "$out/keys.json"
node "$root/scripts/verify-wasm.mjs" "$out/h100-llama.cpp-gpu-proof.json" "$out/keys.json"
"$runner" report "$out/h100-llama.cpp-gpu-proof.json" --keys "$out/keys.json" --out "$out/report-h100" >/dev/null
echo "   $(ls "$out/report-h100" | grep -c 'power') GPU power charts; the proof's checks: tests/fixtures/gpu-proof/h100-2026-11-27/summary.md"
echo "== import the published seed tables (copies in tests/seeds) -> $out/imported/"
rm -rf "$out/imported"
"$runner" import "$root"/tests/seeds/*.txt --out "$out/imported" >/dev/null
echo "   $(ls "$out/imported" | wc -l) documents"
echo "== compare: seed 004's twelve sweeps read together -> $out/compare-seed-004/"
"$runner" compare "$out"/imported/004_*.json --keys "$out/keys.json" --out "$out/compare-seed-004" >/dev/null
echo "   $(grep -c '^## Group' "$out/compare-seed-004/compare.md") comparable groups (by model); Pareto frontier, tables side by side, best of each column in bold"

echo "== every signed run was counted in the key's attempt log first: runner log show $out/demo.attempts"
"$runner" log show "$out/demo.attempts"
echo "== publish the site -> $out/site/ (preview: $runner serve $out/site)"
"$runner" publish "$out/sweep-$stamp.json" "$out/grid-$stamp.json" "$out/agentic-$stamp.json" "$out/speculative-$stamp.json" \
  "$out/sweep-small-batch-$stamp.json" \
  "$out/h100-llama.cpp-gpu-proof.json" "$out/imported" --keys "$out/keys.json" --key "$out/demo.key" \
  --log "$out/demo.attempts" --out "$out/site" >/dev/null
echo "== runner verify-site $out/site: the signed manifest, every file, every result, the module's provenance, the attempt log"
"$runner" verify-site "$out/site" --keys "$out/keys.json"
echo "   gallery comparisons (open in the site):"
echo "   vLLM vs SGLang vs lmdeploy, Qwen2-72B-Instruct on 8 x L20, with vLLM on 4 and 8 x A100 and 4 x L20:"
echo "     #/compare/004_4d3f484aa116390c-11.json/004_4d3f484aa116390c-10.json/004_4d3f484aa116390c-12.json/004_4d3f484aa116390c-9.json/004_4d3f484aa116390c-5.json/004_4d3f484aa116390c-4.json"
echo "   the two simulated servers:                       #/compare/sweep-$stamp.json/sweep-small-batch-$stamp.json"
echo "   a real H100 (NVML power and energy):             #/result/h100-llama.cpp-gpu-proof.json"
echo "   agentic sessions, the prefix cache against its ideal: #/result/agentic-$stamp.json"
echo "   speculative decoding, acceptance by draft position: #/result/speculative-$stamp.json"
echo "   vLLM vs SGLang, Qwen2-72B-Instruct on 8 x L20:   #/diff/004_4d3f484aa116390c-11.json/004_4d3f484aa116390c-10.json"
echo "   vLLM vs lmdeploy, Qwen2-72B-Instruct on 8 x L20: #/diff/004_4d3f484aa116390c-11.json/004_4d3f484aa116390c-12.json"
echo "   vLLM vs TGI, Mistral-7B-OpenOrca-AWQ on A100:    #/diff/003_44f3a8b9f2336bbb-1.json/003_44f3a8b9f2336bbb-2.json"
echo "   the two simulated servers:                       #/diff/sweep-$stamp.json/sweep-small-batch-$stamp.json"
echo "== done: results in $out (signed; journals beside them), module sha256 $(cut -d' ' -f1 "$root/build/wasm/report_wasm_bg.wasm.sha256")"
