#!/usr/bin/env bash
# How exactly the runner stamps token arrivals, against the simulator's ground truth (the
# committed benchmark; not a test). Runs loadgen/examples/precision.rs: the simulator in the same
# process on its own threads, so both ends read one monotonic clock and each token's stamp minus
# the instant the simulator handed its bytes to hyper is the runner's error, with no clock
# conversion. Per case and token clock it prints:
#   first_token_error_us / later_token_error_us  stamp minus the simulator's write (p50 p99 max);
#   send_error_us       the request's bytes at the simulator (the kernel's stamp) minus the send;
#   request_leg_us      the simulator's handler start minus the runner's send;
#   ttft_error_us       the runner's TTFT from its send minus the simulator's own from the bytes'
#                       arrival;
#   token_stamps        token events stamped by the kernel / by the read, and those sharing a read;
#   runner_cpu_us_per_token  process CPU less the simulator's threads (/proc/self/task schedstat);
#   steal_share         CPU time the hypervisor took, over wall time x CPUs: read the rest beside it.
# Cases: paced-16x2ms (16 streams x 256 tokens, 2 ms apart), paced-256x20ms (256 streams x 64
# tokens, 20 ms apart), single (1 stream x 64 tokens, 2 ms apart) and single-busy (the same with a
# spinning thread pinned to the runner's CPU, as when a busy server shares its core). Each case
# runs with --token-clock kernel (SO_TIMESTAMPING receive stamps) and --token-clock read, in turn.
# Targets on a quiet machine: first-token error p50 <= 50 us and p99 <= 300 us; runner CPU
# <= 4 us per token in the paced cases.
# Usage: scripts/bench-precision.sh [ROUNDS]   (default 5; each round takes about a minute)
# PRECISION_FLAGS=… adds flags to every run (e.g. `--requests 100` for a quicker look).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-5}
release_build -p loadgen --example precision
bin=$root/target/release/examples/precision
cases=(paced-16x2ms paced-256x20ms single single-busy)
for round in $(seq 1 "$rounds"); do
  for case in "${cases[@]}"; do
    for clock in kernel read; do
      echo "== round $round case $case clock $clock"
      # shellcheck disable=SC2086 # PRECISION_FLAGS is a list of flags
      "$bin" --case "$case" --token-clock "$clock" ${PRECISION_FLAGS:-}
    done
  done
done
