# Shell functions the scripts share: sourced (`. "$(dirname "$0")/lib.sh"`), never run.

# free_port: a TCP port on 127.0.0.1 that the kernel says is free now.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_listening PORT [PID] [TRIES]: returns once 127.0.0.1:PORT accepts a connection, trying every
# 0.1 s, TRIES times (100); fails sooner when process PID has exited. A connect, through bash's
# /dev/tcp, needs no curl, and is enough for the simulator, which serves as soon as it listens.
wait_listening() {
  local port=$1 pid=${2:-} tries=${3:-100}
  for _ in $(seq 1 "$tries"); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    [ -z "$pid" ] || kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# scratch_dir: makes a temporary directory, SCRATCH, removed at exit together with the
# simulator whose pid SIM_PID holds then, if any (it sets the caller's EXIT trap: call it, do
# not capture it: `scratch_dir; tmp=$SCRATCH`).
scratch_dir() {
  SCRATCH=$(mktemp -d)
  SIM_PID=
  trap '[ -n "${SIM_PID:-}" ] && kill "$SIM_PID" 2>/dev/null; rm -rf "$SCRATCH"' EXIT
}

# start_sim RUNNER [SIM FLAGS...]: starts `RUNNER sim` on 127.0.0.1 and a port the kernel picks,
# and sets SIM_PID and SIM_URL once it serves (the URL is the first line it prints). Fails after
# 30 s, or as soon as the simulator exits. The caller stops it: kill "$SIM_PID".
start_sim() {
  local runner=$1; shift
  local url_file
  url_file=$(mktemp)
  "$runner" sim --host 127.0.0.1 --port 0 "$@" > "$url_file" 2> "$url_file.log" &
  SIM_PID=$!
  SIM_URL=
  for _ in $(seq 1 300); do
    SIM_URL=$(head -n 1 "$url_file" 2>/dev/null)
    case $SIM_URL in http://*) break ;; esac
    kill -0 "$SIM_PID" 2>/dev/null || break
    sleep 0.1
  done
  case $SIM_URL in
    http://*) rm -f "$url_file" "$url_file.log" ;;
    *) echo "the simulator did not start: $(cat "$url_file.log")" >&2; rm -f "$url_file" "$url_file.log"; return 1 ;;
  esac
}

# figure NAME LINE: the number the runner's "benchmark done" log LINE gives NAME
# (`NAME=Some("1.23")` or `NAME=Some(45)`); nothing when it gives none.
figure() { sed -n "s/.*$1=Some(\"\?\([0-9.]*\)\"\?).*/\1/p" <<<"$2"; }

# release_build ARGS…: `cargo build -q --release ARGS…` of this checkout, after the build
# cache's claim: a build directory shared between checkouts (CARGO_BUILD_BUILD_DIR) would
# otherwise hand this checkout another's newer build of the workspace's crates.
release_build() {
  local root; root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  (cd "$root" && scripts/cache.sh claim && cargo build -q --release "$@")
}
