#!/usr/bin/env bash
# What host telemetry costs (the committed benchmark for docs/PERFORMANCE.md's telemetry rows;
# not a test): GPU sampling of 8 GPUs through NVML and scraping a vLLM-sized /metrics page, both
# every 100 ms, in a process that does nothing else (telemetry/examples/cost.rs), so its CPU
# time is theirs. NVML is the fake library of the tests (testkit/fixtures/fake_nvml.c),
# whose calls cost next to nothing: on a real host, the driver's own time per call adds to this.
# The page is served by Python's http.server (HTTP/1.1, kept alive) from another process; it has the shape of a vLLM
# V1 page (12 histograms of 30 buckets for 2 engines, counters, gauges, process metrics: ~80 KB).
# Target: <= 0.5 % of one core. Also prints the telemetry's JSON size per GPU sample (a
# 10-minute 8-GPU benchmark must add <= 200 KB). Usage: scripts/bench-telemetry.sh [SECONDS]
# COST_BIN=… measures that build of the example instead of building this checkout's (an A/B).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/lib.sh"
seconds=${1:-60}
tmp=$(mktemp -d)
trap 'kill ${http_pid:-} 2>/dev/null || true; rm -rf "$tmp"' EXIT
if [ -z "${COST_BIN:-}" ]; then
  release_build -p telemetry --example cost
fi
cost=${COST_BIN:-$root/target/release/examples/cost}
cc -shared -fPIC -O2 -o "$tmp/libfake_nvml.so" "$root/testkit/fixtures/fake_nvml.c"
printf 'gpus 8\nat_ms 0 gpu * power_mw 650000 sm 97 mem 60 mem_used_mib 71000 sm_clock 1755 temp 62 throttle 0x4\n' >"$tmp/nvml.txt"
mkdir -p "$tmp/www"
python3 - "$tmp/www/metrics" <<'PY'
import sys
out = []
labels = lambda e, extra="": f'{{engine="{e}",model_name="meta-llama/Llama-3.1-8B-Instruct"{extra}}}'
for name, kind, value in [("num_requests_running", "gauge", 48), ("num_requests_waiting", "gauge", 3),
                          ("kv_cache_usage_perc", "gauge", 0.8731), ("num_preemptions_total", "counter", 0),
                          ("prefix_cache_queries_total", "counter", 8123456), ("prefix_cache_hits_total", "counter", 812),
                          ("prompt_tokens_total", "counter", 8123456), ("generation_tokens_total", "counter", 2031234)]:
    out.append(f"# HELP vllm:{name} {name}\n# TYPE vllm:{name} {kind}")
    for e in "01":
        out.append(f"vllm:{name}{labels(e)} {float(value)}")
for e in "01":
    for reason in ("stop", "length", "abort"):
        extra = ',finished_reason="%s"' % reason
        out.append(f"vllm:request_success_total{labels(e, extra)} 1234.0")
for h in ["e2e_request_latency_seconds", "time_to_first_token_seconds", "inter_token_latency_seconds",
          "request_queue_time_seconds", "request_inference_time_seconds", "request_prefill_time_seconds",
          "request_decode_time_seconds", "request_prompt_tokens", "request_generation_tokens",
          "request_params_max_tokens", "iteration_tokens_total", "request_time_per_output_token_seconds"]:
    out.append(f"# HELP vllm:{h} {h}\n# TYPE vllm:{h} histogram")
    for e in "01":
        for i in range(30):
            le = ',le="%.6g"' % (0.001 * 2 ** i)
            out.append(f"vllm:{h}_bucket{labels(e, le)} {i * 97.0}")
        inf = ',le="+Inf"'
        out.append(f"vllm:{h}_bucket{labels(e, inf)} 2910.0")
        out.append(f"vllm:{h}_count{labels(e)} 2910.0\nvllm:{h}_sum{labels(e)} 12345.678")
for i in range(40):
    out.append(f"# HELP process_metric_{i} x\n# TYPE process_metric_{i} gauge\nprocess_metric_{i} {i * 1.5e6}")
open(sys.argv[1], "w").write("\n".join(out) + "\n")
PY
port=$(free_port)
# HTTP/1.1 with keep-alive, as engines' servers (uvicorn, hyper, cpp-httplib) answer.
(cd "$tmp/www" && exec python3 -c "import http.server as h, sys
h.SimpleHTTPRequestHandler.protocol_version = 'HTTP/1.1'
h.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), h.SimpleHTTPRequestHandler).serve_forever()" "$port" >/dev/null 2>&1) &
http_pid=$!
wait_listening "$port" "$http_pid" 50
echo "== metrics page: $(wc -c <"$tmp/www/metrics") bytes, $(wc -l <"$tmp/www/metrics") lines; 8 fake GPUs; ${seconds} s at 100 ms"
PROVEBENCH_NVML_LIB="$tmp/libfake_nvml.so" FAKE_NVML_SCRIPT="$tmp/nvml.txt" \
  "$cost" "$seconds" "http://127.0.0.1:$port/metrics" 100
