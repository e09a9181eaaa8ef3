#!/usr/bin/env bash
# Installs and starts a real single-node Slurm (Debian's slurm-wlm 22.05) on this machine for the
# campaign tests (`sbatch --array` against it), idempotently:
#   apt:    slurmctld slurmd slurm-client munge (each when missing; only as root)
#   munge:  munged started when `munge -n | unmunge` fails (key created when /etc/munge/munge.key is absent)
#   slurm:  config, state, spool, logs and pid files all under build/slurm/ (never /etc/slurm);
#           slurmctld and slurmd as root daemons (no systemd) on 127.0.0.1 only, ports 16817/16818;
#           one node (this host's short name, CPUs = nproc, 8 fake GPUs: placeholder device files
#           under build/slurm/fake-gpu/), partition `debug` (default, no time limit)
# Prints `export SLURM_CONF=.../build/slurm/slurm.conf` as its last stdout line, for `eval`.
# When the daemons already answer (started by this version of the script) it only prints that line.
# Env: PROVEBENCH_SLURMCTLD_PORT (16817), PROVEBENCH_SLURMD_PORT (16818), PROVEBENCH_SLURM_GPUS (8).
#   scripts/install-slurm.sh --stop   stops slurmd and slurmctld (munged stays)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/build/slurm
conf=$dir/slurm.conf
export SLURM_CONF=$conf
say() { printf 'install-slurm: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

ctld_port=${PROVEBENCH_SLURMCTLD_PORT:-16817}
slurmd_port=${PROVEBENCH_SLURMD_PORT:-16818}
gpus=${PROVEBENCH_SLURM_GPUS:-8}
host=$(hostname -s)
case $gpus in ''|*[!0-9]*|0) echo "install-slurm: error: PROVEBENCH_SLURM_GPUS must be >= 1" >&2; exit 1 ;; esac

# pid of a daemon from its pid file, only when that process is alive and is that daemon
daemon_pid() { # name pidfile
  local pid
  pid=$(cat "$2" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  [ "$(basename "$(tr '\0' '\n' <"/proc/$pid/cmdline" | head -n1)")" = "$1" ] || return 1
  echo "$pid"
}

# Our own daemon is running (its pid file can take a moment after it forks). A Slurm of
# another checkout holding the ports would answer `scontrol ping` in its place; ours then
# exits at once ("Address already in use"), which this tells apart.
own_daemon() { # name pidfile port
  for _ in $(seq 1 25); do
    daemon_pid "$1" "$2" >/dev/null && return 0
    sleep 0.2
  done
  die "our $1 is not running: another Slurm may hold 127.0.0.1:$3 (stop it with its own scripts/install-slurm.sh --stop); see $dir/log/$1.log"
}

stop_daemon() { # name pidfile
  local pid i
  pid=$(daemon_pid "$1" "$2") || return 0
  say "stopping $1 (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do
    [ -d "/proc/$pid" ] || break
    sleep 0.1
  done
  if [ -d "/proc/$pid" ]; then
    say "$1 still running after 10 s; SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$2"
}

if [ "${1:-}" = --stop ]; then
  stop_daemon slurmd "$dir/slurmd.pid"
  stop_daemon slurmctld "$dir/slurmctld.pid"
  exit 0
elif [ "${1:-}" = --running ]; then
  daemon_pid slurmctld "$dir/slurmctld.pid" >/dev/null && daemon_pid slurmd "$dir/slurmd.pid" >/dev/null
  exit
elif [ $# -gt 0 ]; then
  die "usage: $0 [--stop]"
fi

case $root in *[[:space:]]*) die "slurm.conf cannot hold paths with spaces: $root" ;; esac

# Fast path: the daemons of this config, written by this version of the script, answer.
stamp=$dir/.install-slurm.sha256
script_sha=$(sha256sum <"$0" | cut -d' ' -f1)
if [ -f "$conf" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$script_sha" ] \
   && daemon_pid slurmd "$dir/slurmd.pid" >/dev/null \
   && scontrol ping 2>/dev/null | grep -q 'is UP'; then
  echo "export SLURM_CONF=$conf"
  exit 0
fi

apt_pkgs=()
command -v munged >/dev/null 2>&1 || apt_pkgs+=(munge)
command -v slurmctld >/dev/null 2>&1 || apt_pkgs+=(slurmctld)
command -v slurmd >/dev/null 2>&1 || apt_pkgs+=(slurmd)
command -v sbatch >/dev/null 2>&1 || apt_pkgs+=(slurm-client)
if [ ${#apt_pkgs[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "apt-get install ${apt_pkgs[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${apt_pkgs[@]}" >/dev/null
  else
    die "missing ${apt_pkgs[*]}; install them as root (Debian: apt-get install slurmctld slurmd slurm-client munge)"
  fi
fi
[ "$(id -u)" = 0 ] || die "slurmctld and slurmd run as root here; run this script as root"

# munge: the authentication every Slurm command and daemon uses.
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  if [ ! -s /etc/munge/munge.key ]; then
    say "creating /etc/munge/munge.key"
    mkdir -p /etc/munge
    if command -v mungekey >/dev/null 2>&1; then mungekey --create --keyfile=/etc/munge/munge.key
    else create-munge-key -f; fi
    chown munge:munge /etc/munge/munge.key && chmod 0400 /etc/munge/munge.key
  fi
  mkdir -p /run/munge /var/lib/munge /var/log/munge
  chown munge:munge /run/munge /var/lib/munge /var/log/munge
  say "starting munged"
  if id munge >/dev/null 2>&1; then runuser -u munge -- /usr/sbin/munged
  else /usr/sbin/munged --force; fi
  for _ in $(seq 1 50); do
    munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
    sleep 0.1
  done
  munge -n | unmunge >/dev/null || die "munge -n | unmunge fails after starting munged (see /var/log/munge/munged.log)"
fi

# Config. RealMemory: 90% of what slurmd detects, so the node never drains for low memory.
# batch_sched_delay=0: a batch job (an array's next task) starts when the scheduler runs on the
# event that frees its place, not up to 3 s later (Slurm's default, for clusters that take
# thousands of submissions a second): 8 tasks of 0.5 s one at a time, 24 s before, 8 s after.
mkdir -p "$dir/state" "$dir/spool" "$dir/log"
cpus=$(nproc)
mem=$(slurmd -C 2>/dev/null | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
mem=$(( ${mem:-1024} * 9 / 10 ))
new_conf=$(cat <<EOF
# Written by scripts/install-slurm.sh (on each run that does not find its daemons up); do not edit.
ClusterName=provebench
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$dir/plugstack.conf
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.log
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
GresTypes=gpu
ReturnToService=2
KillWait=5
MinJobAge=3600
InactiveLimit=0
NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$cpus RealMemory=$mem Gres=gpu:$gpus State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
)
# gres/gpu drops file-less GPUs ("Removing file-less GPU") and ignores files that are not
# character/block devices, so each fake GPU is a placeholder symlink to /dev/null under
# build/slurm/fake-gpu/ (nothing opens them: task/none constrains no devices). Their trailing
# numbers become the CUDA_VISIBLE_DEVICES / SLURM_JOB_GPUS indices jobs see.
mkdir -p "$dir/fake-gpu"
for i in $(seq 0 $((gpus - 1))); do
  [ "$(readlink "$dir/fake-gpu/nvidia$i" 2>/dev/null)" = /dev/null ] || ln -sfn /dev/null "$dir/fake-gpu/nvidia$i"
done
new_gres="AutoDetect=off
NodeName=$host Name=gpu File=$dir/fake-gpu/nvidia[0-$((gpus - 1))]"
printf '%s\n' "$new_conf" >"$conf.new"
printf '%s\n' "$new_gres" >"$dir/gres.conf"
: >"$dir/plugstack.conf"
if ! cmp -s "$conf.new" "$conf"; then
  # A changed config (or a first one): restart whatever runs from the old one.
  stop_daemon slurmd "$dir/slurmd.pid"
  stop_daemon slurmctld "$dir/slurmctld.pid"
  mv "$conf.new" "$conf"
else
  rm -f "$conf.new"
fi

# slurmctld and slurmd started by another checkout's copy of this script (`-f CONF`, CONF not
# ours): stopped when CONF is gone with its checkout, which nobody can stop any more.
for proc in /proc/[0-9]*; do
  name=$(basename "$(tr '\0' '\n' <"$proc/cmdline" 2>/dev/null | head -n1)")
  case $name in slurmctld|slurmd) ;; *) continue ;; esac
  other=$(tr '\0' '\n' <"$proc/cmdline" 2>/dev/null | sed -n '/^-f$/{n;p;q}')
  [ -n "$other" ] && [ "$other" != "$conf" ] && [ ! -e "$other" ] || continue
  pid=${proc#/proc/}
  say "stopping $name (pid $pid) of a checkout that no longer exists ($other)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do [ -d "$proc" ] || break; sleep 0.1; done
  [ ! -d "$proc" ] || kill -KILL "$pid" 2>/dev/null || true
done

t0=$(date +%s%N)
if ! daemon_pid slurmctld "$dir/slurmctld.pid" >/dev/null; then
  say "starting slurmctld on 127.0.0.1:$ctld_port"
  slurmctld -f "$conf"
fi
for _ in $(seq 1 100); do
  scontrol ping 2>/dev/null | grep -q 'is UP' && break
  sleep 0.2
done
scontrol ping 2>/dev/null | grep -q 'is UP' || die "slurmctld does not answer; see $dir/log/slurmctld.log"
# The controller that answers must be ours: it names the config it read.
answering=$(scontrol show config 2>/dev/null | sed -n 's/^SLURM_CONF *= *//p')
[ "$answering" = "$conf" ] || die "the slurmctld on 127.0.0.1:$ctld_port runs from ${answering:-an unknown config}, not $conf: stop it with that checkout's scripts/install-slurm.sh --stop"
own_daemon slurmctld "$dir/slurmctld.pid" "$ctld_port"
if ! daemon_pid slurmd "$dir/slurmd.pid" >/dev/null; then
  say "starting slurmd on 127.0.0.1:$slurmd_port"
  slurmd -f "$conf" -N "$host"
fi
own_daemon slurmd "$dir/slurmd.pid" "$slurmd_port"

# Wait (30 s at most) for the node to take jobs; resume it when it is down or drained.
state=
for i in $(seq 1 60); do
  state=$(sinfo -h -n "$host" -o %T 2>/dev/null | head -n1)
  state=${state%%[^a-z]*} # drop the flag suffix: idle*, down~, drained@ ...
  case $state in
    idle|mixed|allocated|completing) break ;;
    down|drained|draining|inval|fail|failing)
      say "node $host is $state; resuming it"
      scontrol update nodename="$host" state=resume 2>/dev/null || true ;;
  esac
  sleep 0.5
done
case $state in
  idle|mixed|allocated|completing) ;;
  *) die "node $host is '${state:-unknown}' after 30 s; see $dir/log/slurmd.log and $dir/log/slurmctld.log" ;;
esac
printf '%s\n' "$script_sha" >"$stamp"
say "slurm up in $(( ($(date +%s%N) - t0) / 1000000 )) ms: node $host ($cpus CPUs, gpu:$gpus) $state, partition debug"
echo "export SLURM_CONF=$conf"
