#!/usr/bin/env bash
# Seeds the fuzz corpora (fuzz/corpus/TARGET/) from the project's fixtures and from what the
# simulator really streams, so that every campaign starts from inputs each parser accepts.
#
#   scripts/fuzz-seeds.sh [RUNNER]      (default target/debug/runner)
#
# Inputs are named by their SHA-1, as libFuzzer names what it adds; seeding again adds only
# what is new. The signed documents are signed with a fresh key whose public half replaces
# fuzz/corpus-keys.json (the targets trust it).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
runner=${1:-target/debug/runner}
corpus=fuzz/corpus
scratch_dir
work=$SCRATCH

# add TARGET FILE...: copies each file into the target's corpus under its SHA-1.
add() {
    local target=$1
    shift
    mkdir -p "$corpus/$target"
    for f in "$@"; do
        [ -s "$f" ] || continue
        cp "$f" "$corpus/$target/$(sha1sum "$f" | cut -c1-40)"
    done
}
# add_prefixed TARGET BYTE FILE...: the file behind one leading byte (targets whose first
# byte picks a split or an API).
add_prefixed() {
    local target=$1 byte=$2
    shift 2
    for f in "$@"; do
        local prefixed
        prefixed="$work/prefixed-$byte-$(basename "$f")"
        { printf "\\x$byte"; cat "$f"; } >"$prefixed"
        add "$target" "$prefixed"
    done
}

# spec_document OUT: an unsigned result of three chat requests on the real-text prompts to a
# simulator decoding speculatively.
spec_document() {
    local port pid
    port=$(free_port)
    "$runner" sim --host 127.0.0.1 --port "$port" --itl-ms 0 --ttft-ms 0 --seed 7 --speculative 3 \
        --acceptance 0.8,0.6,0.4 >/dev/null 2>&1 &
    pid=$!
    wait_listening "$port" "$pid"
    "$runner" run --target "http://127.0.0.1:$port" --no-sign --out "$1" --data real-text \
        --data-output-tokens 8 --backend openai-chat --max-requests 3 --gpu-sample-ms 0 >/dev/null 2>&1
    kill "$pid"
}

# What the simulator streams, raw: HTTP heads and chunked framing included.
port=$(free_port)
"$runner" sim --host 127.0.0.1 --port "$port" --itl-ms 0 --ttft-ms 0 --seed 7 >/dev/null 2>&1 &
SIM_PID=$!
wait_listening "$port" "$SIM_PID"
base=http://127.0.0.1:$port
post() { # NAME PATH BODY
    curl -s -i --raw -H 'content-type: application/json' -d "$3" "$base$2" >"$work/$1.http"
}
post completions /v1/completions '{"model":"m","prompt":"hi there","max_tokens":6,"stream":true,"stream_options":{"include_usage":true}}'
post chat /v1/chat/completions '{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":6,"stream":true}'
post tgi /generate_stream '{"inputs":"hi there","parameters":{"max_new_tokens":6,"details":true}}'
post sglang /generate '{"text":"hi there","sampling_params":{"max_new_tokens":6},"stream":true}'
post plain /v1/completions '{"model":"m","prompt":"hi","max_tokens":4}'
curl -s -i --raw "$base/metrics" >"$work/metrics.http"
curl -s -i --raw -H 'accept: application/openmetrics-text; version=1.0.0' "$base/metrics" >"$work/openmetrics.http"
kill "$SIM_PID"
SIM_PID=

# body FILE: the payload of a raw response, de-chunked.
body() { python3 - "$1" <<'EOF'
import sys
raw = open(sys.argv[1], "rb").read()
head, _, rest = raw.partition(b"\r\n\r\n")
if b"chunked" not in head.lower():
    sys.stdout.buffer.write(rest); sys.exit()
out = b""
while rest:
    size, _, rest = rest.partition(b"\r\n")
    n = int(size.split(b";")[0], 16)
    if n == 0: break
    out += rest[:n]; rest = rest[n + 2:]
sys.stdout.buffer.write(out)
EOF
}
# payloads FILE: an event stream's data payloads, one a line.
payloads() { body "$1" | sed -n 's/^data: \{0,1\}//p'; }

for f in "$work"/*.http; do add_prefixed http1_response 00 "$f"; add_prefixed http1_response 2a "$f"; done
for f in "$work"/{completions,chat,tgi,sglang}.http; do body "$f" >"${f%.http}.sse"; done
add_prefixed sse_events 00 "$work"/*.sse loadgen/tests/fixtures/llama-server-sse/*.txt
add_prefixed sse_events 7f "$work"/*.sse
payloads "$work/completions.http" >"$work/completions.data"
payloads "$work/chat.http" >"$work/chat.data"
for f in loadgen/tests/fixtures/llama-server-sse/*.txt; do
    sed -n 's/^data: \{0,1\}//p' "$f" >"$work/$(basename "$f").data"
done
add_prefixed chunk_openai 00 "$work/completions.data" "$work"/completions-*.data
add_prefixed chunk_openai 01 "$work/chat.data" "$work"/chat-*.data
payloads "$work/tgi.http" >"$work/tgi.data" && add chunk_tgi "$work/tgi.data"
payloads "$work/sglang.http" >"$work/sglang.data" && add chunk_sglang "$work/sglang.data"
body "$work/metrics.http" >"$work/metrics.prom"
body "$work/openmetrics.http" >"$work/openmetrics.prom"
add prometheus_text "$work"/*.prom

# Traces and datasets, in every format the readers take.
printf 'timestamp,input_length,output_length\n0,100,2\n7,65530,16\n' >"$work/trace.csv"
printf '{"timestamp": 0, "input_length": 700, "output_length": 2, "hash_ids": [0, 1]}\n{"timestamp": 12, "input_length": 900, "output_length": 4, "hash_ids": [0, 2]}\n' >"$work/mooncake.jsonl"
printf '{"arrival_time": "2025-01-01T00:00:00Z", "ContextTokens": 10, "GeneratedTokens": 3}\n{"arrival_time": "2025-01-01T00:00:01.5Z", "ContextTokens": 20, "GeneratedTokens": 1}\n' >"$work/azure.jsonl"
printf '{"id":"s","block_size":64,"hash_id_scope":"local","requests":[{"type":"n","t":0,"in":100,"out":20,"hash_ids":[1,2],"api_time":1.0},{"type":"subagent","t":1.5,"duration_ms":3000,"requests":[{"type":"n","t":1.7,"in":80,"out":10,"hash_ids":[7,8],"api_time":0.5}]},{"type":"n","t":5,"in":260,"out":5,"hash_ids":[1,2,3,4,5],"api_time":0.2}]}\n' >"$work/agentx.jsonl"
add agentx_trace "$work/agentx.jsonl"
add trace_file "$work/trace.csv" "$work/mooncake.jsonl" "$work/azure.jsonl"
printf '{"prompt": "Tell me a story.", "output_tokens": 12}\n{"text": "Why?", "max_tokens": 3}\n' >"$work/prompts.jsonl"
printf '[{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}, {"from": "human", "value": "more"}, {"from": "gpt", "value": "ok"}]}, {"conversations": [{"from": "human", "value": "no reply"}]}]\n' >"$work/sharegpt.json"
add dataset_file "$work/prompts.jsonl" "$work/sharegpt.json"

# Result documents: signed, unsigned and imported, small enough to mutate quickly.
"$runner" keygen "$work/corpus" >/dev/null 2>&1
rm -f fuzz/corpus-keys.json
"$runner" trust --keys fuzz/corpus-keys.json --name fuzz-corpus "$work/corpus.pub" >/dev/null 2>&1
for n in 1 3; do
    "$runner" synth --key "$work/corpus.key" --requests "$n" --output-tokens 5 --prompt-tokens 16 --out "$work/signed-$n.json" 2>/dev/null
    "$runner" synth --no-sign --requests "$n" --output-tokens 5 --prompt-tokens 16 --seed 9 --out "$work/unsigned-$n.json" 2>/dev/null
done
"$runner" import tests/seeds/*.txt importers/tests/fixtures/*.json --out "$work/imported" >/dev/null 2>&1
# A speculative run on real text: events of several tokens, the server's own timing, its
# draft counters, categories.
spec_document "$work/unsigned-speculative.json"
docs=("$work"/signed-*.json "$work"/unsigned-*.json)
imported=("$work"/imported/*.json)
add verify_document "${docs[@]}" "${imported[@]:0:4}"
add report_render "${docs[@]}" "${imported[@]:0:2}"
{ cat "$work/signed-1.json"; printf '\n\0--B--\0\n'; cat "$work/unsigned-1.json"; } >"$work/pair-1"
{ cat "$work/signed-3.json"; printf '\n\0--B--\0\n'; cat "$work/signed-1.json"; } >"$work/pair-3"
add report_diff "$work/pair-1" "$work/pair-3"
add import tests/seeds/*.txt importers/tests/fixtures/*.json

# A document's records and token gaps on their own (python: the JSON path is the point).
for f in "$work/signed-3.json" "$work/unsigned-3.json"; do
    python3 - "$f" "$work" <<'EOF'
import base64, json, sys, os
doc = json.load(open(sys.argv[1]))
statement = json.loads(base64.b64decode(doc["payload"])) if "payload" in doc else doc
stem = os.path.join(sys.argv[2], os.path.basename(sys.argv[1]))
for i, bench in enumerate(statement["predicate"]["benchmarks"][:2]):
    open(f"{stem}.records{i}", "w").write(json.dumps(bench["records"]))
    for j, gaps in enumerate(bench["records"]["token_gaps"][:2]):
        open(f"{stem}.gaps{i}{j}", "w").write(gaps)
EOF
done
add record_columns "$work"/*.records*
add token_gaps "$work"/*.gaps*
printf 'gICAgICAgICAAQ==' >"$work/max.gaps" # the largest 64-bit varint
add token_gaps "$work/max.gaps"

for d in "$corpus"/*/; do echo "$(basename "$d"): $(ls "$d" | wc -l) inputs"; done
