#!/usr/bin/env bash
# The benchmark step of a CI pipeline, runnable as it stands: benchmark a server, gate the
# result against a committed baseline, and publish a site of both as the pipeline's artifact.
#
#   scripts/ci-gate.sh --baseline bench/baseline.json --keys bench/keys.json --key ci.key --out artifact
#   scripts/ci-gate.sh --record ...     # the first run, or a change accepted: write the baseline
#
# Without TARGET it starts the simulator (`runner sim $SIM_ARGS`), so the step can be tried
# with no GPU; in a real pipeline TARGET is the engine the job started (or pass `--engine`
# flags through BENCH_ARGS and let the runner start it from a recipe).
#
# Environment:
#   RUNNER      the runner binary (default: runner on PATH, else this checkout's target/*/runner)
#   TARGET      base URL of a running server (default: start the simulator)
#   SIM_ARGS    flags for the simulator (default: none)
#   BENCH_ARGS  the benchmark (default: a steady constant-rate run long enough for intervals)
#   GATE_ARGS   extra flags for `runner gate` (--metric …, --max-regression …)
#
# The artifact directory gets candidate.json, run.json and gate.json (the runner's --json
# outcomes) and site/ (`runner publish`). Exit status: the gate's — 0 passed, 10 a metric
# regressed, 8 the result carries an error flag, 9 the server could not be reached, 1 a
# result does not verify, 3 bad input.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

baseline='' keys='' key='' out='' record=''
while [ $# -gt 0 ]; do
  case $1 in
    --baseline) baseline=${2:?--baseline FILE|DIR}; shift ;;
    --keys) keys=${2:?--keys keys.json}; shift ;;
    --key) key=${2:?--key SIGNING.key}; shift ;;
    --out) out=${2:?--out DIR}; shift ;;
    --record) record=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "ci-gate: unknown argument $1 (see --help)" >&2; exit 3 ;;
  esac
  shift
done
[ -n "$baseline" ] && [ -n "$keys" ] && [ -n "$key" ] && [ -n "$out" ] ||
  { echo "ci-gate: --baseline, --keys, --key and --out are required (see --help)" >&2; exit 3; }

runner=${RUNNER:-}
if [ -z "$runner" ]; then
  runner=$(command -v runner || true)
  for built in "$here/../target/release/runner" "$here/../target/debug/runner"; do
    [ -n "$runner" ] || { [ -x "$built" ] && runner=$built; }
  done
fi
[ -x "$runner" ] || { echo "ci-gate: no runner binary (set RUNNER, or cargo build --release)" >&2; exit 3; }

mkdir -p "$out"
target=${TARGET:-}
if [ -z "$target" ]; then
  # shellcheck disable=SC2086 # SIM_ARGS is a list of flags
  start_sim "$runner" ${SIM_ARGS:-}
  trap 'kill "$SIM_PID" 2>/dev/null || true' EXIT
  target=$SIM_URL
fi

# A steady open-loop rate with a warm-up left out: what the intervals assume.
bench=${BENCH_ARGS:---profile constant --rate 100 --max-requests 700 --warmup-requests 100 --data prompt_tokens=64,output_tokens=16 --seed 1}
status=0
# shellcheck disable=SC2086 # BENCH_ARGS is a list of flags
RUST_LOG=${RUST_LOG:-warn} "$runner" run --target "$target" $bench --key "$key" \
  --out "$out/candidate.json" --json > "$out/run.json" || status=$?
case $status in
  0|8) ;;                         # written; a flagged result is held to it by the gate too
  *) echo "ci-gate: the benchmark failed (exit $status): $out/run.json" >&2; exit "$status" ;;
esac

if [ -n "$record" ]; then
  mkdir -p "$(dirname "$baseline")"
  cp "$out/candidate.json" "$baseline"
  echo "ci-gate: recorded $baseline"
  exit "$status"
fi

status=0
# shellcheck disable=SC2086 # GATE_ARGS is a list of flags
"$runner" gate "$out/candidate.json" --baseline "$baseline" --keys "$keys" ${GATE_ARGS:-} \
  --json > "$out/gate.json" || status=$?
# The site shows both, verified and compared, whatever the verdict.
published=("$out/candidate.json")
[ -f "$baseline" ] && published+=("$baseline")
RUST_LOG=${RUST_LOG:-warn} "$runner" publish "${published[@]}" --out "$out/site" --keys "$keys" > /dev/null ||
  echo "ci-gate: publishing the site failed; the gate's verdict stands" >&2
if [ "$status" -eq 0 ]; then
  echo "ci-gate: passed ($out/gate.json, site in $out/site)"
else
  echo "ci-gate: failed with exit $status ($out/gate.json, site in $out/site)" >&2
fi
exit "$status"
