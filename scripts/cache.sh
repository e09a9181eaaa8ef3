#!/usr/bin/env bash
# The per-user build cache that outlives a checkout: what `make` builds that does not depend on
# where the checkout lies, kept under PROVEBENCH_CACHE (default ~/.cache/provebench; `off`
# keeps everything inside the checkout, as a machine without a cache has it).
#
#   cargo-build/   cargo's build directory (CARGO_BUILD_BUILD_DIR, set by the Makefile) for
#                  the workspace and export/: compiled registry crates are reused by every
#                  clone; the workspace's own crates are shared by name too (see claim)
#   wasm-src/      a copy of the checkout's files at one path, which the module is compiled
#                  from (scripts/build-wasm.sh), so its compiler flags are every checkout's
#   wasm-target/   the wasm module's build: std and registry crates for wasm32, every path in
#                  them remapped, so any checkout reuses them
#   wasm-proofs/   KEY/: a module whose inputs hash to KEY was rebuilt elsewhere to the same
#                  bytes (scripts/check-wasm-reproducible.sh)
#   llama.cpp-*/   llama-server built from source where the prebuilt one cannot run
#
# Usage:
#   scripts/cache.sh prune
#     Keeps cargo-build/ from growing with every clone: removes the compiled units of
#     checkouts whose sources are gone, and of workspace members not compiled for a day (an
#     hour once the directory is over PROVEBENCH_CACHE_MAX_GIB, default 16). Registry crates
#     stay. Never fails the build: what it cannot read stays.
#   scripts/cache.sh claim
#     Run before a build. The workspace's own crates are compiled under the same names in
#     every checkout (cargo hashes their paths relative to the workspace), and cargo judges
#     them fresh by time: a checkout whose files are older than another checkout's build would
#     take that build's crates for its own. So when the last checkout to build here was
#     another (another path, or a fresh clone at the same one: each keeps a random name in its
#     build/), every file of this one is touched and its crates are compiled again, unless
#     both hold exactly the same commit tree (nothing changed, nothing added: git's tree hash
#     names the content): then its files are dated 1970 and cargo reuses the build.
#   scripts/cache.sh build CARGO ARGS...
#     Runs a cargo build. Should it fail on a damaged file in cargo-build/ (rustc's "invalid
#     metadata files", a linker's "file truncated" or "undefined hidden symbol", left by a build
#     killed mid-way: cargo trusts its fingerprints, not the files' bytes), removes the
#     compiled units the errors name and their crates' incremental sessions (all of
#     cargo-build/ when they name none) and builds once more; any other failure is the
#     build's own, returned as is.
set -uo pipefail

cache=${PROVEBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provebench}
say() { printf 'cache: %s\n' "$*" >&2; }

# remove_units DIR HASH [NAME]: every file and directory of the compiled unit HASH under
# profile DIR, and, given NAME, the incremental sessions of that crate (named by hashes of
# their own).
remove_units() {
  rm -rf "$1"/deps/*-"$2" "$1"/deps/*-"$2".* "$1"/.fingerprint/*-"$2" "$1"/build/*-"$2" \
    "$1"/incremental/*-"$2"
  if [ -n "${3:-}" ]; then rm -rf "$1"/incremental/"$3"-*; fi
}

prune() {
  local build=${CARGO_BUILD_BUILD_DIR:-$cache/cargo-build}
  [ "$cache" != off ] && [ -d "$build" ] || return 0
  local cargo_home=${CARGO_HOME:-$HOME/.cargo} now removed=0 names="" profile depfile stem hash src age
  local max_kib=$(( ${PROVEBENCH_CACHE_MAX_GIB:-16} * 1024 * 1024 ))
  # Units of checkouts are kept a day after they were last compiled; over the size budget,
  # an hour.
  local keep=86400
  [ "$(du -sk "$build" 2>/dev/null | cut -f1)" -le "$max_kib" ] 2>/dev/null || keep=3600
  now=$(date +%s)
  for profile in "$build"/*/; do
    [ -d "$profile/deps" ] || continue
    for depfile in "$profile"/deps/*.d; do
      [ -f "$depfile" ] || continue
      # A depfile's first line: "OUTPUT: SOURCE SOURCE ..."; the first source is the crate
      # root: under CARGO_HOME for a registry crate (kept), else a checkout's. A workspace
      # member's is relative to its workspace, which the file does not name: those are kept
      # for a while after their last build; one named by an absolute path, while it exists.
      src=$(sed -n '1{s/^[^:]*: *//;s/ .*//;p;q}' "$depfile")
      case $src in
        "") continue ;;
        "$cargo_home"/*) continue ;;
        /*) [ ! -e "$src" ] || continue ;;
        *) age=$(( now - $(stat -c %Y "$depfile" 2>/dev/null || echo "$now") ))
           [ "$age" -gt "$keep" ] || continue ;;
      esac
      stem=$(basename "$depfile" .d)
      hash=${stem##*-}
      [ "$hash" != "$stem" ] || continue
      remove_units "$profile" "$hash"
      removed=$((removed + 1))
      [ "$removed" -gt 8 ] || names="$names ${stem%-*}"
    done
  done
  [ "$removed" = 0 ] || say "removed $removed compiled units of checkouts gone or unbuilt for $((keep / 3600)) h (${names# }$([ "$removed" -le 8 ] || echo ', …')) from $build ($(du -sh "$build" 2>/dev/null | cut -f1) left)"
}

build() {
  local build=${CARGO_BUILD_BUILD_DIR:-}
  local log rc path unit hash named=0
  log=$(mktemp)
  "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" = 0 ] || [ -z "$build" ] ||
    ! grep -qE 'E0786|invalid metadata files|metadata not found|file truncated|undefined hidden symbol|file format not recognized|malformed archive|unexpected end of file' "$log"; then
    rm -f "$log"
    return "$rc"
  fi
  # The damaged files the errors name inside the build directory: PROFILE/deps/NAME-HASH.EXT.
  for path in $(grep -oE "$build/[^ '\"\`:,()]+" "$log" | sort -u); do
    unit=$(basename "$path")
    unit=${unit%%.*}
    hash=${unit##*-}
    case $path in "$build"/*/deps/*) ;; *) continue ;; esac
    [ "$hash" != "$unit" ] || continue
    remove_units "${path%/deps/*}" "$hash" "${unit%-*}"
    named=$((named + 1))
  done
  if [ "$named" = 0 ]; then
    say "the build failed on a damaged file in the cache it does not name: removing $build"
    rm -rf "$build"
  else
    say "the build failed on $named damaged compiled unit(s) in $build: removed them"
  fi
  rm -f "$log"
  say "building again"
  "$@"
}

claim() {
  local build=${CARGO_BUILD_BUILD_DIR:-}
  [ -n "$build" ] || return 0
  local here tree last last_path last_tree last_id
  here=$(pwd -P)
  # The sources, when the checkout holds exactly a commit's (no change, no new file): its tree.
  # Without rewriting git's index: the runner's build script watches it, and a refreshed index
  # (after the touch below) compiled the runner again between make's build and its tests.
  tree=dirty
  if git rev-parse --git-dir >/dev/null 2>&1 && [ -z "$(git --no-optional-locks status --porcelain 2>/dev/null)" ]; then
    tree=$(git rev-parse 'HEAD^{tree}')
  fi
  last=$(cat "$build/checkout" 2>/dev/null || true)
  # The mark: "PATH TREE ID" (an older one lacks the ID, and so is another checkout's).
  read -r last_path last_tree last_id <<<"$last"
  # Which checkout this is: a random name kept in its build/ (ignored by git), so that a fresh
  # clone where the last one lay (as CI runners check out, at one path) is another checkout.
  local id_file=$here/build/cache-checkout-id id
  id=$(cat "$id_file" 2>/dev/null || true)
  if [ -z "$id" ]; then
    id=$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')
    mkdir -p "$here/build" && printf '%s\n' "$id" > "$id_file"
  fi
  # The same checkout as last time needs nothing: its files' times are its own edits.
  if [ -n "$last" ] && { [ "$last_path" != "$here" ] || [ "$last_id" != "$id" ]; }; then
    if [ "$tree" != dirty ] && [ "$last_tree" = "$tree" ]; then
      # The very sources compiled last: dated before any build, so cargo reuses that build.
      say "the last build here ($last_path) was of these very sources (tree $tree): its compiled crates are reused"
      git ls-files -z | xargs -0 touch -c -h -d @1 --
    else
      say "the last build here was another checkout's ($last_path): this one's crates are compiled again"
      git ls-files -z --cached --others --exclude-standard | xargs -0 touch -c --
    fi
  fi
  mkdir -p "$build" && printf '%s %s %s\n' "$here" "$tree" "$id" > "$build/checkout"
}

case ${1:-} in
  prune) prune ;;
  claim) claim ;;
  build) shift; build "$@"; exit ;;
  *) echo "usage: $0 prune | claim | build CARGO ARGS..." >&2; exit 2 ;;
esac
exit 0
