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
