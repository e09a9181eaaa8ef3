#!/usr/bin/env bash
# with-slurm.sh COMMAND [ARGS...]: runs COMMAND with this checkout's single-node Slurm up
# (scripts/install-slurm.sh, for the campaign tests' job arrays), then stops it again, whether
# COMMAND passed, failed or was interrupted, so that a test run leaves the machine as it found
# it. A Slurm that was already up (`make slurm`) stays up. Exits with COMMAND's status.
set -uo pipefail
slurm=$(cd "$(dirname "$0")" && pwd)/install-slurm.sh

if "$slurm" --running; then
  "$@"
  exit
fi
trap '"$slurm" --stop' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
"$slurm" >/dev/null || exit
"$@"
