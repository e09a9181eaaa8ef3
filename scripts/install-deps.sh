#!/usr/bin/env bash
# Installs what the tests need beyond the Rust toolchain, on a fresh Debian machine, idempotently:
#   apt:  openssl, curl, g++, nodejs, npm, chromium (each when missing), python3-venv (when venv is missing)
#   npm:  playwright-core for tests/browser (npm ci, when node_modules is missing or stale)
#   cargo: cargo-nextest, which runs the Rust tests (cargo install, when `cargo nextest` is missing)
#   pip:  a project venv in .venv with the independent verifiers (securesystemslib, cryptography,
#         jsonschema), pytest, and what the GPU proof uses (gguf, nvidia-ml-py), at pinned
#         versions; the gguf wheel itself in build/wheels for the proof's bundle
# The wasm toolchain is scripts/build-wasm.sh's business.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=${PROVEBENCH_VENV:-$root/.venv}
say() { printf 'install-deps: %s\n' "$*" >&2; }

apt_pkgs=()
command -v openssl >/dev/null 2>&1 || apt_pkgs+=(openssl)
command -v curl >/dev/null 2>&1 || apt_pkgs+=(curl)
# A C++ compiler: libfuzzer-sys builds libFuzzer for the fuzz targets.
command -v c++ >/dev/null 2>&1 || apt_pkgs+=(g++)
command -v node >/dev/null 2>&1 || apt_pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || apt_pkgs+=(npm)
[ -x /usr/bin/chromium ] || apt_pkgs+=(chromium)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || apt_pkgs+=(python3-venv)
if [ ${#apt_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "apt-get install ${apt_pkgs[*]}"
    apt-get update -qq && apt-get install -y -qq "${apt_pkgs[@]}" >/dev/null
  else
    say "error: missing ${apt_pkgs[*]}; install them (Debian: apt-get install ${apt_pkgs[*]})"
    exit 1
  fi
fi

stamp="$venv/.provebench-deps"
wanted="$(cat "$root/tests/python/requirements.txt")"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  say "creating $venv with $(echo $wanted | tr '\n' ' ')"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$root/tests/python/requirements.txt"
  printf '%s' "$wanted" > "$stamp"
fi
# The gguf wheel the GPU proof's bundle carries to a host without network (scripts/gpu-proof.sh).
gguf=$(grep '^gguf==' "$root/tests/python/requirements.txt")
if ! ls "$root/build/wheels/gguf-${gguf#gguf==}-"*.whl >/dev/null 2>&1; then
  say "pip download $gguf into build/wheels"
  "$venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    -d "$root/build/wheels" "$gguf"
fi

# The browser tests' driver: playwright-core at the version package-lock.json pins (it
# downloads no browser; the tests use /usr/bin/chromium).
browser_tests="$root/tests/browser"
if [ ! -f "$browser_tests/node_modules/.package-lock.json" ] || [ "$browser_tests/package-lock.json" -nt "$browser_tests/node_modules/.package-lock.json" ]; then
  say "npm ci in tests/browser"
  npm ci --prefix "$browser_tests" --no-audit --no-fund --loglevel=error
fi

# The Rust tests' runner. Rust machines here ship it; elsewhere it is built from crates.io
# at the version its lockfile pins (a few minutes, once).
if ! cargo nextest --version >/dev/null 2>&1; then
  say "cargo install --locked cargo-nextest"
  env -u CARGO_BUILD_BUILD_DIR cargo install -q --locked cargo-nextest
fi
