#!/usr/bin/env bash
# Installs what the tests need beyond the Rust toolchain, on a fresh Debian machine, idempotently:
#   apt:  openssl, curl, nodejs (when missing), python3-venv (when venv is missing)
#   pip:  a project venv in .venv with the independent verifiers (securesystemslib, cryptography,
#         jsonschema) and pytest, at pinned versions
# The wasm toolchain is scripts/build-wasm.sh's business.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=${PROVEBENCH_VENV:-$root/.venv}
say() { printf 'install-deps: %s\n' "$*" >&2; }

apt_pkgs=()
command -v openssl >/dev/null 2>&1 || apt_pkgs+=(openssl)
command -v curl >/dev/null 2>&1 || apt_pkgs+=(curl)
command -v node >/dev/null 2>&1 || apt_pkgs+=(nodejs)
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
