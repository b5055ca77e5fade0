#!/usr/bin/env bash
# slurm_local.sh: a one-node Slurm cluster on this machine, for tests (tests/slurm) and for
# trying `tilebench slurm` where no cluster exists (scripts/h200_slurm.sh). Root only: slurmd
# runs jobs as their owner.
#
#   scripts/slurm_local.sh start DIR [GPUS]   generate DIR/slurm.conf and a munge key, start
#       munged, slurmctld and slurmd (all state, sockets, logs and pid files under DIR, on free
#       ports, so nothing of the system's is touched and two clusters do not meet), wait until
#       the node is idle (at most 60 s). GPUS > 0 declares that many gpu GRES (gres.conf names
#       /dev/nvidia0.. when they exist, else a count), so `--gres gpu:1` tasks queue one per GPU.
#       Then: export SLURM_CONF=DIR/slurm.conf for sbatch, squeue, scancel, sinfo.
#   scripts/slurm_local.sh stop DIR           stop the three daemons (by their pid files; each
#       wait bounded) and cancel what is left.
# SLURM_PREFIX=P (a folder the packages were unpacked into with dpkg -x, scripts/slurm_debs.sh):
#   the programs come from there instead of the system's. The daemons run with P's libraries on
#   LD_LIBRARY_PATH and slurm.conf's PluginDir in P; the commands (sbatch, squeue, scancel,
#   sinfo) become wrappers in DIR/bin that load P's libraries through the dynamic loader's
#   --library-path, so the environment sbatch hands the jobs does not carry them; slurmd starts
#   /usr/sbin/slurmstepd (a path built into it), so a wrapper is put there when none exists.
#   Afterwards `. DIR/env.sh` sets PATH and SLURM_CONF for the commands.
# SLURM_LOCAL_CPUS=N: the node offers N CPUs (default: all); 1 runs the tasks one at a time.
# Needs Debian's slurmctld, slurmd, slurm-client and munge (apt-get install -y slurmctld slurmd
# slurm-client munge); nothing is enabled as a system service.
set -euo pipefail
cmd=${1:?usage: slurm_local.sh start|stop DIR [GPUS]}
dir=${2:?usage: slurm_local.sh start|stop DIR [GPUS]}
gpus=${3:-0}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

stop_pid() { # pidfile: TERM, wait up to 15 s, then KILL
  local f=$1 pid
  [ -s "$f" ] || return 0
  pid=$(cat "$f")
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

if [ "$cmd" = stop ]; then
  if [ -f "$dir/slurm.conf" ]; then
    PATH=$dir/bin:$PATH SLURM_CONF=$dir/slurm.conf timeout 10 scancel --user="$(id -un)" 2>/dev/null || true
  fi
  stop_pid "$dir/slurmd.pid"
  stop_pid "$dir/slurmctld.pid"
  stop_pid "$dir/munged.pid"
  exit 0
fi
[ "$cmd" = start ] || { echo "slurm_local.sh: unknown command '$cmd'" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "slurm_local.sh: needs root (slurmd starts jobs as their owner)" >&2; exit 2; }
plugin_line=""
echo "export SLURM_CONF=$dir/slurm.conf" >"$dir/env.sh"
if [ -n "${SLURM_PREFIX:-}" ]; then
  p=$(cd "$SLURM_PREFIX" && pwd)
  libs=$p/usr/lib/x86_64-linux-gnu:$p/usr/lib/x86_64-linux-gnu/slurm-wlm:$p/lib/x86_64-linux-gnu
  loader=$(ls /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 2>/dev/null | head -1)
  [ -n "$loader" ] || { echo "slurm_local.sh: no x86-64 dynamic loader found" >&2; exit 2; }
  mkdir -p "$dir/bin"
  for b in sbatch squeue sinfo scancel scontrol sacct; do
    [ -x "$p/usr/bin/$b" ] && printf '#!/bin/sh\nexec %s --library-path %s %s "$@"\n' "$loader" "$libs" "$p/usr/bin/$b" >"$dir/bin/$b"
    chmod +x "$dir/bin/$b" 2>/dev/null || true
  done
  for b in munged slurmctld slurmd; do
    real=$p/usr/sbin/$b; [ -x "$real" ] || real=$p/usr/sbin/$b-wlm
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$libs" "$real" >"$dir/bin/$b"
    chmod +x "$dir/bin/$b"
  done
  if [ ! -e /usr/sbin/slurmstepd ]; then
    printf '#!/bin/sh\n# slurm_local.sh (SLURM_PREFIX=%s)\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$p" "$libs" \
      "$p/usr/sbin/slurmstepd-wlm" >/usr/sbin/slurmstepd
    chmod +x /usr/sbin/slurmstepd
    echo "slurm_local.sh: wrote /usr/sbin/slurmstepd (slurmd's built-in path) running $p's"
  fi
  plugin_line="PluginDir=$p/usr/lib/x86_64-linux-gnu/slurm-wlm"
  export PATH=$dir/bin:$PATH
  echo "export PATH=$dir/bin:\$PATH" >>"$dir/env.sh"
fi
for b in munged slurmctld slurmd sbatch squeue sinfo scancel; do
  command -v "$b" >/dev/null || { echo "slurm_local.sh: $b not found (apt-get install slurmctld slurmd slurm-client munge)" >&2; exit 2; }
done

host=$(hostname -s)
cpus=${SLURM_LOCAL_CPUS:-$(nproc)} # SLURM_LOCAL_CPUS=1: one single-CPU task at a time
mem=$(awk '/MemTotal/ {print int($2 / 1024 * 0.8)}' /proc/meminfo)
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 700 "$dir/munge"
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
gres_line="" node_gres=""
if [ "$gpus" -gt 0 ]; then
  gres_line="GresTypes=gpu"
  node_gres=" Gres=gpu:$gpus"
  if [ -e /dev/nvidia0 ]; then
    echo "NodeName=$host Name=gpu File=/dev/nvidia[0-$((gpus - 1))]" >"$dir/gres.conf"
  else
    # no GPU here (CI): gres/gpu wants device files; stand-ins that every machine has
    files=(/dev/null /dev/zero /dev/full /dev/random /dev/urandom)
    [ "$gpus" -le ${#files[@]} ] || { echo "slurm_local.sh: at most ${#files[@]} GPUs without /dev/nvidia*" >&2; exit 2; }
    : >"$dir/gres.conf"
    for ((i = 0; i < gpus; i++)); do echo "NodeName=$host Name=gpu File=${files[$i]}" >>"$dir/gres.conf"; done
  fi
fi
cat >"$dir/slurm.conf" <<EOF
# one-node cluster of scripts/slurm_local.sh (generated)
ClusterName=tilebench
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
KillWait=5
MinJobAge=300
$gres_line
$plugin_line
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem$node_gres State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" --seed-file="$dir/munge/seed"
export SLURM_CONF=$dir/slurm.conf
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 1 120); do
  state=$(timeout 5 sinfo -h -N -o %t 2>/dev/null | head -1 || true)
  case "$state" in inval*|drain*) break ;; esac
  case "$state" in idle*) echo "slurm_local.sh: node $host idle ($cpus CPUs${node_gres:+,$node_gres}); . $dir/env.sh for the commands"; exit 0 ;; esac
  sleep 0.5
done
echo "slurm_local.sh: the node did not come up (state '${state:-none}'); logs:" >&2
tail -n 5 "$dir/slurmctld.log" "$dir/slurmd.log" "$dir/munged.log" >&2 || true
"$0" stop "$dir" || true
exit 1
