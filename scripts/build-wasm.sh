#!/usr/bin/env bash
# Builds report-wasm's module, reproducibly: the same source gives the same bytes, whoever
# builds it, wherever the checkout lies, whenever.
#
#   * one toolchain, pinned in report-wasm/toolchain.toml: Debian 12's rustc-web (std rebuilt
#     for wasm32 with -Zbuild-std) and lld-22; another is refused, naming what to install
#     (installed here from Debian when missing and we are root; without root, unpack the
#     packages anywhere and set WASM_TOOLCHAIN_PREFIX, see ARCHITECTURE.md);
#   * every path the compiler could write into the module remapped to a fixed one (the
#     checkout, the target directory, CARGO_HOME's registry, the toolchain's sources);
#   * no timestamps, no host data; rustflags set here alone (CARGO_ENCODED_RUSTFLAGS), so
#     nothing from the environment changes code generation;
#   * wasm-bindgen-cli at exactly the version Cargo.lock pins (installed from crates.io when
#     missing).
#
# Writes into build/wasm/ (WASM_OUT): report_wasm_bg.wasm, the glue report_wasm.js, their
# sha256 (report_wasm_bg.wasm.sha256), the key of all the build's inputs
# (report_wasm.inputs.sha256, see below) and report_wasm.build.json: the toolchain, the source
# commit, the command and the digests, which `runner publish` signs as the module's SLSA
# provenance. It then compares the digests with report-wasm/expected.sha256, the committed
# sha256 of the module this source gives (a difference is reported, not an error: the source
# may have changed; `make test` fails on it).
#
# WASM_UNPINNED=1 builds with whatever toolchain is found (a rustup toolchain with the wasm32
# target, else Debian's of any version); the build info then says `"pinned": false` and names
# the toolchain, and the module will not match the published digest.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${WASM_OUT:-$root/build/wasm}
prefix=${WASM_TOOLCHAIN_PREFIX:-/usr}
profile=wasm-release
target=wasm32-unknown-unknown
pin_file=$root/report-wasm/toolchain.toml
expected_file=$root/report-wasm/expected.sha256

say() { printf 'build-wasm: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

pinned() { sed -n "s/^$1 = \"\(.*\)\"\$/\1/p" "$pin_file"; }
want_rustc=$(pinned rustc)
want_commit=$(pinned rustc_commit)
want_lld=$(pinned wasm_ld)
debian_pkgs=$(pinned debian_packages)
[ -n "$want_rustc" ] && [ -n "$want_commit" ] && [ -n "$want_lld" ] && [ -n "$debian_pkgs" ] ||
  die "$pin_file: rustc, rustc_commit, wasm_ld and debian_packages must all be set"

wb_version=$(awk '$0 == "name = \"wasm-bindgen\"" { getline; gsub(/version = |"/, ""); print; exit }' "$root/Cargo.lock")
[ -n "$wb_version" ] || die "wasm-bindgen is not in $root/Cargo.lock; run 'cargo generate-lockfile' first"

rustc=$prefix/bin/rustc
cargo=$prefix/bin/cargo
wasm_ld=$prefix/bin/wasm-ld-22
has_debian_toolchain() {
  [ -x "$cargo" ] && [ -x "$rustc" ] && [ -x "$wasm_ld" ] && [ -d "$prefix/lib/rustlib/src/rust/library" ]
}
has_rustup_target() {
  command -v rustup >/dev/null 2>&1 && rustup target list --installed 2>/dev/null | grep -qx "$target"
}
install_hint() {
  echo "install it as root with: apt-get install $debian_pkgs; without root: build in a rootless" \
    "Debian 12 container with those packages, or unpack them and their dependencies with" \
    "dpkg-deb -x into a directory DIR and run WASM_TOOLCHAIN_PREFIX=DIR/usr scripts/build-wasm.sh"
}

unpinned=${WASM_UNPINNED:-}
if [ -z "$unpinned" ] && ! has_debian_toolchain && [ "$prefix" = /usr ] &&
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  say "installing the pinned toolchain: $debian_pkgs"
  # shellcheck disable=SC2086
  apt-get install -y -qq $debian_pkgs >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq $debian_pkgs >/dev/null; } ||
    say "the pinned versions are not installable here; trying Debian's current ones"
  # shellcheck disable=SC2086
  has_debian_toolchain || apt-get install -y -qq $(echo "$debian_pkgs" | sed 's/=[^ ]*//g') >/dev/null || true
fi

# `rustc -vV` fields, by name.
rustc_field() { "$1" -vV | sed -n "s/^$2: //p"; }

if has_debian_toolchain; then
  have_rustc=$(rustc_field "$rustc" release)
  have_commit=$(rustc_field "$rustc" commit-hash)
  have_lld=$("$wasm_ld" --version | grep -oE '[0-9]+\.[0-9]+\.[0-9]+' | head -1)
  if [ "$have_rustc" != "$want_rustc" ] || [ "$have_commit" != "$want_commit" ] || [ "$have_lld" != "$want_lld" ]; then
    [ -n "$unpinned" ] || die "the module is built with rustc $want_rustc ($want_commit) and lld $want_lld \
($pin_file); $prefix has rustc $have_rustc ($have_commit) and lld $have_lld. Another toolchain gives \
other bytes, which would not match the published sha256: $(install_hint) (or WASM_UNPINNED=1 to build anyway)"
    pinned_flag=false
  else
    pinned_flag=true
  fi
  toolchain=debian
elif [ -n "$unpinned" ] && has_rustup_target; then
  rustc=$(command -v rustc)
  cargo=$(command -v cargo)
  have_rustc=$(rustc_field "$rustc" release)
  have_commit=$(rustc_field "$rustc" commit-hash)
  have_lld="rust-lld of rustc $have_rustc"
  pinned_flag=false
  toolchain=rustup
else
  die "the pinned wasm toolchain is not installed (rustc-web $want_rustc, lld $want_lld under $prefix): $(install_hint)"
fi
[ "$pinned_flag" = true ] || say "warning: unpinned toolchain (rustc $have_rustc, $have_commit; lld $have_lld): the module will not match the published sha256"

# Its own target dir: artefacts of two compilers must not share fingerprints. In the build
# cache outside the checkout when there is one (scripts/cache.sh): every path below it is
# remapped, so any checkout of any path can reuse std and the registry crates built there.
cache=${PROVEBENCH_CACHE:-off}
if [ -n "${CARGO_TARGET_DIR:-}" ] || [ "$cache" = off ]; then
  targets=${CARGO_TARGET_DIR:-$root/target}
else
  targets=$cache/wasm-target
fi
target_dir=$targets/$([ "$toolchain" = debian ] && echo debian-rustc-web || echo rustup-wasm)
# What the module is compiled from: the checkout, or with the cache a copy of the checkout's
# files at one path inside it. The compiler's flags name that path (its remap below), and
# cargo rebuilds whatever was compiled with other flags, so a copy at a fixed path is what lets
# one checkout reuse another's build. A file is rewritten only when its bytes changed: cargo
# compares times, and a clone with the same source rebuilds nothing.
src=$root
if [ "$targets" = "$cache/wasm-target" ] && git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
  src=$cache/wasm-src
  mkdir -p "$src"
  exec 9>"$cache/wasm.lock"
  flock 9
  (cd "$root" && git ls-files -z --cached --others --exclude-standard) | python3 -c '
import os, shutil, sys
root, src = sys.argv[1], sys.argv[2]
files = {f for f in sys.stdin.buffer.read().decode().split("\0") if f and os.path.isfile(os.path.join(root, f))}
changed = 0
for f in files:
    a, b = os.path.join(root, f), os.path.join(src, f)
    try:
        same = os.path.getsize(a) == os.path.getsize(b) and open(a, "rb").read() == open(b, "rb").read()
    except OSError:
        same = False
    if not same:
        os.makedirs(os.path.dirname(b), exist_ok=True)
        shutil.copyfile(a, b)
        changed += 1
for d, _, names in os.walk(src, topdown=False):
    for n in names:
        rel = os.path.relpath(os.path.join(d, n), src)
        if rel not in files:
            os.remove(os.path.join(d, n))
            changed += 1
    if d != src and not os.listdir(d):
        os.rmdir(d)
print(f"build-wasm: compiling from {src} ({len(files)} files, {changed} changed since its last build)", file=sys.stderr)
' "$root" "$src"
fi
sysroot=$("$rustc" --print sysroot)
cargo_home=${CARGO_HOME:-$HOME/.cargo}
# Later remaps win where prefixes nest (the target dir inside the checkout).
flags=(
  -C target-feature=+simd128
  "--remap-path-prefix=$src=/provebench"
  "--remap-path-prefix=$target_dir=/provebench/target"
  "--remap-path-prefix=$cargo_home=/cargo"
  "--remap-path-prefix=$sysroot/lib/rustlib/src/rust=/rustc/$have_commit"
)
# wasm SIMD (simd128: every current browser, Node and wasmtime have it): sha2's SHA-256 and
# SHA-512 have simd128 backends, and hashing is half of loading a large signed result.
encoded=$(IFS=$'\x1f'; echo "${flags[*]}")
say "toolchain: $toolchain rustc $have_rustc ($have_commit), lld $have_lld$([ "$toolchain" = debian ] && echo ', -Zbuild-std')"

# Its build directory too (not the native build's, which the Makefile may name): every
# intermediate path stays under the remapped target dir.
build_env=(CARGO_ENCODED_RUSTFLAGS="$encoded" CARGO_TARGET_DIR="$target_dir" CARGO_BUILD_BUILD_DIR="$target_dir" SOURCE_DATE_EPOCH=0)
if [ "$toolchain" = debian ]; then
  env PATH="$prefix/bin:$PATH" RUSTC="$rustc" RUSTDOC="$prefix/bin/rustdoc" RUSTC_BOOTSTRAP=1 \
    CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER="$wasm_ld" "${build_env[@]}" \
    "$cargo" build --locked --manifest-path "$src/Cargo.toml" -p report-wasm --target "$target" \
      --profile "$profile" -Zbuild-std=std,panic_abort
else
  env "${build_env[@]}" "$cargo" build --locked --manifest-path "$src/Cargo.toml" -p report-wasm \
    --target "$target" --profile "$profile"
fi

module="$target_dir/$target/$profile/report_wasm.wasm"
[ -f "$module" ] || die "cargo finished but $module is missing"

# wasm-bindgen-cli must match the crate exactly, or the glue and the module disagree.
bindgen=$(command -v wasm-bindgen || true)
if [ -z "$bindgen" ] || [ "$("$bindgen" --version | awk '{print $2}')" != "$wb_version" ]; then
  say "installing wasm-bindgen-cli $wb_version (a few minutes, once)"
  # Only the `wasm-bindgen` program, without the test runner's TLS (rustls, ring), at
  # opt-level 1: a quarter less CPU on a new machine, the same bytes out (docs/PERFORMANCE.md).
  env -u CARGO_BUILD_BUILD_DIR CARGO_PROFILE_RELEASE_OPT_LEVEL=1 cargo install -q wasm-bindgen-cli \
    --version "$wb_version" --no-default-features --bin wasm-bindgen ||
    die "could not install wasm-bindgen-cli $wb_version from crates.io"
  bindgen=$(command -v wasm-bindgen || echo "${CARGO_HOME:-$HOME/.cargo}/bin/wasm-bindgen")
fi

rm -rf "$out"
mkdir -p "$out"
# The key of everything that went into these bytes (scripts/check-wasm-reproducible.sh proves
# a key once per machine): each source file the compiler read, by its remapped path and sha256
# (rustc's dep-info), every Cargo.toml and Cargo.lock of the checkout (features, profiles,
# versions), this script (flags, remaps, commands), the toolchain and wasm-bindgen.
{
  sed -n '1{s/^[^:]*: *//;p;q}' "${module%.wasm}.d" | tr ' ' '\n' | grep -v '^$' | sort -u |
    while read -r f; do
      printf '%s %s\n' "$(sha256sum < "$f" | cut -d' ' -f1)" "$f"
    done | sed -e "s|$target_dir|/provebench/target|" -e "s|$src|/provebench|" -e "s|$cargo_home|/cargo|" \
      -e "s|$sysroot/lib/rustlib/src/rust|/rustc/$have_commit|"
  (cd "$root" && { git ls-files -co --exclude-standard -- '*Cargo.lock' '*Cargo.toml' 2>/dev/null ||
    find . \( -name target -o -name build -o -name node_modules -o -name '.*' ! -name . \) -prune -o \
      \( -name Cargo.toml -o -name Cargo.lock \) -print | sed 's|^\./||'; } | LC_ALL=C sort | xargs sha256sum)
  sha256sum < "$0"
  printf '%s\n' "$toolchain" "$("$rustc" -vV)" "$have_lld" "wasm-bindgen $wb_version" "$encoded" | sed "s|$target_dir|/provebench/target|g; s|$src|/provebench|g"
} | sha256sum | cut -d' ' -f1 > "$out/report_wasm.inputs.sha256"
# Without the name section (a third of a megabyte of function names, 13 % of the module, which
# every reader would download for the sake of symbolised traps).
"$bindgen" --target web --remove-name-section --out-dir "$out" --out-name report_wasm "$module"
(cd "$out" && sha256sum report_wasm_bg.wasm > report_wasm_bg.wasm.sha256)

# What the module was built from and with: `runner publish` signs it as SLSA provenance.
commit=null dirty=null
if git -C "$root" rev-parse --verify -q HEAD >/dev/null 2>&1; then
  commit="\"$(git -C "$root" rev-parse HEAD)\""
  [ -z "$(git -C "$root" --no-optional-locks status --porcelain --untracked-files=no 2>/dev/null)" ] && dirty=false || dirty=true
fi
sha() { sha256sum "$1" | cut -d' ' -f1; }
json_str() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
cat > "$out/report_wasm.build.json" <<EOF
{
  "source": { "commit": $commit, "dirty": $dirty, "cargo_lock_sha256": "$(sha "$root/Cargo.lock")" },
  "command": "scripts/build-wasm.sh",
  "cargo": "cargo build --locked -p report-wasm --target $target --profile $profile$([ "$toolchain" = debian ] && echo ' -Zbuild-std=std,panic_abort')",
  "rustflags": "-C target-feature=+simd128, paths remapped to /provebench, /provebench/target, /cargo and /rustc/<commit>",
  "toolchain": {
    "pinned": $pinned_flag,
    "kind": "$toolchain",
    "rustc": "$(json_str "$("$rustc" -V)")",
    "rustc_commit": "$have_commit",
    "wasm_ld": "$(json_str "$have_lld")",
    "wasm_bindgen": "$wb_version"
  },
  "outputs": {
    "report_wasm_bg.wasm": "$(sha "$out/report_wasm_bg.wasm")",
    "report_wasm.js": "$(sha "$out/report_wasm.js")"
  }
}
EOF

built=$(cd "$out" && sha256sum report_wasm_bg.wasm report_wasm.js)
say "wrote $out ($(wc -c < "$out/report_wasm_bg.wasm") bytes, gzipped $(gzip -9c "$out/report_wasm_bg.wasm" | wc -c)); sha256 $(sha "$out/report_wasm_bg.wasm")"
if [ -f "$expected_file" ] && [ "$built" = "$(grep -v '^#' "$expected_file")" ]; then
  say "the module and its glue match $expected_file"
else
  say "note: the module or its glue differs from $expected_file (the source changed, or the toolchain);"
  say "      after a change to the module's source: (cd $out && sha256sum report_wasm_bg.wasm report_wasm.js) > $expected_file"
fi
