#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer (the `libfuzzer-sys` crate, on this stable
# toolchain: the coverage instrumentation is plain `-C` flags, no nightly needed).
#
#   scripts/fuzz.sh TARGET SECONDS [LIBFUZZER_FLAG...]   fuzz one target
#   scripts/fuzz.sh --all SECONDS                         each target in turn (`make fuzz`: briefly)
#   scripts/fuzz.sh --merge TARGET                        minimise what was found into
#                                                         fuzz/corpus/TARGET (to commit)
#   scripts/fuzz.sh --list                                the targets
#
# New inputs land in build/fuzz/corpus/TARGET (the committed fuzz/corpus/TARGET is read,
# never written); a crash, timeout or out-of-memory input in build/fuzz/artifacts/TARGET/,
# and the run fails. Copy such an input into fuzz/regressions/TARGET/ and it is replayed by
# `cargo test -p fuzz` from then on. Each run ends with one line:
#   fuzz: TARGET: N execs in S s (R/s), coverage C, features F, corpus K, crashes X
set -euo pipefail
cd "$(dirname "$0")/.."

targets() { sed -n 's/^name = "\(.*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^fuzz$'; }

# --target: the coverage flags must reach the targets' code but not build scripts or
# proc macros (which run in the compiler, where no libFuzzer runtime is linked).
triple=$(rustc -vV | sed -n 's/^host: //p')
build() {
    RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module \
        -Cllvm-args=-sanitizer-coverage-level=4 \
        -Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
        -Cllvm-args=-sanitizer-coverage-pc-table \
        -Cllvm-args=-sanitizer-coverage-trace-compares \
        --check-cfg=cfg(fuzzing)" \
        cargo build --profile fuzz -p fuzz --features libfuzzer --bins \
        --target "$triple" --target-dir target/fuzz >&2
}
bin() { echo "target/fuzz/$triple/fuzz/$1"; }

# Limits every target runs under: a parser that allocates past them, or takes longer than
# this on one input, is a finding.
limits=(-rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10)

run() { # TARGET SECONDS [FLAGS...]
    local t=$1 seconds=$2
    shift 2
    local work=build/fuzz/corpus/$t artifacts=build/fuzz/artifacts/$t log=build/fuzz/$t.log
    mkdir -p "$work" "$artifacts"
    local rc=0 started=$SECONDS
    "$(bin "$t")" "$work" "fuzz/corpus/$t" "${limits[@]}" -max_total_time="$seconds" \
        -print_final_stats=1 -artifact_prefix="$artifacts/" "$@" >"$log" 2>&1 || rc=$?
    local execs cov ft corp crashes took=$((SECONDS - started))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    corp=$(ls "$work" "fuzz/corpus/$t" | grep -c '^[0-9a-f]\{40\}$' || true)
    # slow-unit-* files are inputs that took over 10 s once (a paused or starved machine
    # makes them too); crash-, timeout-, oom- and leak- ones are findings.
    crashes=$(ls "$artifacts" | grep -vc '^slow-unit-' || true)
    echo "fuzz: $t: ${execs:-0} execs in $took s ($(( ${execs:-0} / (took > 0 ? took : 1) ))/s), coverage ${cov:-?}, features ${ft:-?}, corpus $corp, crashes $crashes"
    if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
        echo "fuzz: $t failed (exit $rc); see $log and $artifacts/" >&2
        tail -30 "$log" >&2
        return 1
    fi
}

case "${1:-}" in
--list) targets ;;
--all)
    build
    failed=0
    for t in $(targets); do run "$t" "${2:?seconds}" || failed=1; done
    exit $failed
    ;;
--merge)
    t=${2:?target}
    build
    mkdir -p "build/fuzz/corpus/$t"
    merged=$(mktemp -d)
    # The smallest set of inputs that keeps every feature (smaller than -merge=1's).
    "$(bin "$t")" -set_cover_merge=1 "${limits[@]}" "$merged" "fuzz/corpus/$t" "build/fuzz/corpus/$t" >&2
    rm -rf "fuzz/corpus/$t" && mv "$merged" "fuzz/corpus/$t" && chmod 755 "fuzz/corpus/$t"
    echo "fuzz: $t: $(ls "fuzz/corpus/$t" | wc -l) inputs in fuzz/corpus/$t"
    ;;
"" | -*) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
*)
    t=$1
    targets | grep -qx "$t" || { echo "fuzz: no target $t (scripts/fuzz.sh --list)" >&2; exit 2; }
    build
    run "$t" "${2:?seconds}" "${@:3}"
    ;;
esac
