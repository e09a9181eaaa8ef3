#!/usr/bin/env bash
# Checks that report-wasm's module builds reproducibly: rebuilds it from a copy of this source
# in a temporary directory (another path, its own target directory, a later time) and compares
# the module and its glue byte for byte with build/wasm (the build `make` made here) and with
# report-wasm/expected.sha256 (the digests committed with the source). Also checks that the
# build script refuses a toolchain other than the pinned one. `make test` runs it, the second
# build once per machine for the same inputs (a proof kept in the build cache, scripts/cache.sh,
# or in build/wasm-proofs without one).
# Usage: scripts/check-wasm-reproducible.sh   (after scripts/build-wasm.sh)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
say() { printf 'wasm-repro: %s\n' "$*" >&2; }
fail() { say "FAILED: $*"; exit 1; }
[ -f "$root/build/wasm/report_wasm_bg.wasm" ] || fail "no build/wasm/report_wasm_bg.wasm: run scripts/build-wasm.sh first"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/provebench-repro.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# 1. Another toolchain is refused, and the refusal names the pinned one and how to install it.
fake=$tmp/fake-toolchain
mkdir -p "$fake/bin" "$fake/lib/rustlib/src/rust/library"
cat > "$fake/bin/rustc" <<'SH'
#!/bin/sh
printf 'rustc 1.95.0 (59807616e 2026-04-14)\nrelease: 1.95.0\ncommit-hash: 59807616e7d4\n'
SH
printf '#!/bin/sh\necho "Debian LLD 22.1.8"\n' > "$fake/bin/wasm-ld-22"
cp "$fake/bin/rustc" "$fake/bin/cargo"
chmod +x "$fake/bin/"*
if WASM_TOOLCHAIN_PREFIX=$fake WASM_OUT=$tmp/refused "$root/scripts/build-wasm.sh" 2> "$tmp/refused.log"; then
  fail "the build script accepted rustc 1.95.0"
fi
want=$(sed -n 's/^rustc = "\(.*\)"$/\1/p' "$root/report-wasm/toolchain.toml")
grep -q "rustc $want" "$tmp/refused.log" && grep -q "apt-get install rustc-web=" "$tmp/refused.log" ||
  fail "the refusal does not name rustc $want and what to install: $(cat "$tmp/refused.log")"
[ ! -e "$tmp/refused" ] || fail "the refused build wrote $tmp/refused"
say "a toolchain other than the pinned one is refused"

# 3 first (it costs nothing): the committed digests are those of the module built here.
(cd "$root/build/wasm" && sha256sum report_wasm_bg.wasm report_wasm.js) > "$tmp/here.sha256"
diff <(grep -v '^#' "$root/report-wasm/expected.sha256") "$tmp/here.sha256" > /dev/null ||
  fail "report-wasm/expected.sha256 is not the digest of the module this source builds; after changing the module's source: (cd build/wasm && sha256sum report_wasm_bg.wasm report_wasm.js) > report-wasm/expected.sha256"

# 2. A second build elsewhere gives the same bytes: once per machine for the same inputs. A
# proof is kept under the key of everything that went into the module (build-wasm.sh's
# report_wasm.inputs.sha256) with the bytes it was shown for; it is reused only when both the
# key and the bytes match, so a damaged or stale proof is proven again, never believed.
if [ "${PROVEBENCH_CACHE:-off}" = off ]; then proofs=$root/build/wasm-proofs; else proofs=$PROVEBENCH_CACHE/wasm-proofs; fi
key=$(cat "$root/build/wasm/report_wasm.inputs.sha256" 2>/dev/null || true)
case $key in
  [0-9a-f]*) proof=$proofs/${key:0:64} ;;
  *) proof= ; say "build/wasm has no key of its inputs: proving without the cache" ;;
esac
if [ -n "$proof" ] && [ -f "$proof/SHA256SUMS" ]; then
  if cmp -s "$proof/SHA256SUMS" "$tmp/here.sha256"; then
    say "skipping the second build: inputs $key were rebuilt elsewhere to these bytes on this machine before ($proof; delete it to prove again)"
    say "the module matches report-wasm/expected.sha256"
    exit 0
  fi
  say "the proof kept for inputs $key names other bytes (a damaged or stale cache): proving again"
fi
say "proving it: a clean build of a copy of the source in $tmp/elsewhere (niced)"
copy=$tmp/elsewhere/a-copy-of-provebench
mkdir -p "$copy"
(cd "$root" && git ls-files -z --cached --others --exclude-standard |
  tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$copy"
start=$(date +%s)
CARGO_TARGET_DIR=$tmp/target WASM_OUT=$tmp/out nice -n 10 "$copy/scripts/build-wasm.sh" 2> "$tmp/build.log" ||
  fail "the second build failed: $(tail -20 "$tmp/build.log")"
for f in report_wasm_bg.wasm report_wasm.js; do
  if ! cmp -s "$root/build/wasm/$f" "$tmp/out/$f"; then
    rm -rf "$root/build/wasm-elsewhere" && cp -r "$tmp/out" "$root/build/wasm-elsewhere"
    fail "$f differs between build/wasm and a build of the same source in $copy (kept in build/wasm-elsewhere): $(sha256sum "$root/build/wasm/$f" "$tmp/out/$f")"
  fi
done
# The key names the inputs, not where they lay: the copy's must be this checkout's.
[ -z "$proof" ] || [ "$(cat "$tmp/out/report_wasm.inputs.sha256")" = "$key" ] ||
  fail "the key of the module's inputs depends on where they lie: $key here, $(cat "$tmp/out/report_wasm.inputs.sha256") in $copy"
say "a clean build in $copy ($(( $(date +%s) - start )) s) gave the same module and glue, sha256 $(sha256sum < "$tmp/out/report_wasm_bg.wasm" | cut -d' ' -f1)"

if [ -n "$proof" ]; then
  mkdir -p "$proof" && cp "$tmp/here.sha256" "$proof/SHA256SUMS.tmp.$$" && mv "$proof/SHA256SUMS.tmp.$$" "$proof/SHA256SUMS" ||
    say "could not keep the proof in $proof (it will be proven again next time)"
fi
say "the module matches report-wasm/expected.sha256"
