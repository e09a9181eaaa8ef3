#!/usr/bin/env bash
# Builds the report-wasm module for the browser and for wasmtime, on either kind of machine:
#   1. a rustup toolchain with the wasm32-unknown-unknown target installed: an ordinary cargo build;
#   2. otherwise Debian's rustc-web (1.96) with rust-web-src and lld-22: std rebuilt for wasm32 with
#      -Zbuild-std (installed here when missing and we are root);
# then wasm-bindgen --target web (the CLI at exactly the version Cargo.lock pins) into build/wasm/,
# with the module's sha256 beside it. Nothing is downloaded at run time but registry packages.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${WASM_OUT:-$root/build/wasm}
profile=wasm-release
target=wasm32-unknown-unknown
debian_pkgs=(rustc-web cargo-web rust-web-src lld-22)

say() { printf 'build-wasm: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# wasm SIMD (simd128: every current browser, Node and wasmtime have it): sha2's SHA-256 and
# SHA-512 have simd128 backends, and hashing is half of loading a large signed result.
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS="${CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS:-} -C target-feature=+simd128"

wb_version=$(awk '$0 == "name = \"wasm-bindgen\"" { getline; gsub(/version = |"/, ""); print; exit }' "$root/Cargo.lock")
[ -n "$wb_version" ] || die "wasm-bindgen is not in $root/Cargo.lock; run 'cargo generate-lockfile' first"

has_rustup_target() {
  command -v rustup >/dev/null 2>&1 && rustup target list --installed 2>/dev/null | grep -qx "$target"
}
has_debian_toolchain() {
  [ -x /usr/bin/cargo ] && [ -x /usr/bin/rustc ] && [ -d /usr/lib/rustlib/src/rust/library ] && command -v wasm-ld-22 >/dev/null 2>&1
}

if has_rustup_target; then
  say "toolchain: rustup ($(rustc --version))"
  target_dir=${CARGO_TARGET_DIR:-$root/target}
  cargo build --manifest-path "$root/Cargo.toml" -p report-wasm --target "$target" --profile "$profile"
else
  if ! has_debian_toolchain; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      say "no rustup wasm32 target; installing Debian's ${debian_pkgs[*]}"
      apt-get install -y -qq "${debian_pkgs[@]}" >/dev/null || { apt-get update -qq && apt-get install -y -qq "${debian_pkgs[@]}" >/dev/null; }
    fi
  fi
  has_debian_toolchain || die "no way to build for $target: neither 'rustup target add $target' has been done, \
nor are Debian's ${debian_pkgs[*]} installed (/usr/bin/cargo, /usr/lib/rustlib/src/rust/library, wasm-ld-22); \
install one of them (as root: apt-get install ${debian_pkgs[*]})"
  say "toolchain: Debian $(/usr/bin/rustc --version) with -Zbuild-std"
  # Its own target dir: artefacts of two compilers must not share fingerprints.
  target_dir=${CARGO_TARGET_DIR:-$root/target}/debian-rustc-web
  PATH=/usr/bin:$PATH RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1 \
    CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=wasm-ld-22 CARGO_TARGET_DIR="$target_dir" \
    /usr/bin/cargo build --manifest-path "$root/Cargo.toml" -p report-wasm --target "$target" \
      --profile "$profile" -Zbuild-std=std,panic_abort
fi

module="$target_dir/$target/$profile/report_wasm.wasm"
[ -f "$module" ] || die "cargo finished but $module is missing"

# wasm-bindgen-cli must match the crate exactly, or the glue and the module disagree.
bindgen=$(command -v wasm-bindgen || true)
if [ -z "$bindgen" ] || [ "$("$bindgen" --version | awk '{print $2}')" != "$wb_version" ]; then
  say "installing wasm-bindgen-cli $wb_version (a few minutes, once)"
  cargo install -q wasm-bindgen-cli --version "$wb_version" || die "could not install wasm-bindgen-cli $wb_version from crates.io"
  bindgen=$(command -v wasm-bindgen || echo "${CARGO_HOME:-$HOME/.cargo}/bin/wasm-bindgen")
fi

rm -rf "$out"
mkdir -p "$out"
"$bindgen" --target web --out-dir "$out" --out-name report_wasm "$module"
(cd "$out" && sha256sum report_wasm_bg.wasm > report_wasm_bg.wasm.sha256)
say "wrote $out ($(wc -c < "$out/report_wasm_bg.wasm") bytes, gzipped $(gzip -9c "$out/report_wasm_bg.wasm" | wc -c)); sha256 $(cut -d' ' -f1 "$out/report_wasm_bg.wasm.sha256")"
