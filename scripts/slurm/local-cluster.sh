#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for tests and for trying the job scripts:
#   scripts/slurm/local-cluster.sh start DIR   # prints `export SLURM_CONF=DIR/slurm.conf`
#   scripts/slurm/local-cluster.sh stop DIR
# `start` installs slurmctld, slurmd, the client tools and munge from the distribution's
# packages when they are missing (Debian/Ubuntu, as root), writes a slurm.conf under DIR (state,
# spool, logs and pid files there too, on ports of its own) and starts munged (unless one
# runs), slurmctld and slurmd; it returns once the node takes jobs. `stop` ends what `start`
# started, by the pids it recorded.
set -euo pipefail

cmd="${1:?usage: local-cluster.sh start|stop DIR}"
dir="$(mkdir -p "${2:?usage: local-cluster.sh start|stop DIR}" && cd "$2" && pwd)"
conf="$dir/slurm.conf"
export SLURM_CONF="$conf"

install() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null && command -v munged >/dev/null && return
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        echo "local-cluster.sh: Slurm is not installed, and installing it needs root and apt-get" >&2
        exit 3
    fi
    echo "local-cluster.sh: installing slurmctld, slurmd, slurm-client and munge" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge >&2 \
        || { apt-get update >&2 && apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge >&2; }
}

start_munge() {
    if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
        return # a munged answers already
    fi
    [ -s /etc/munge/munge.key ] || mungekey --create --keyfile=/etc/munge/munge.key
    chown munge:munge /etc/munge/munge.key 2>/dev/null || true
    chmod 0400 /etc/munge/munge.key
    mkdir -p /run/munge /var/lib/munge /var/log/munge
    chown munge:munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
    if id munge >/dev/null 2>&1; then
        runuser -u munge -- munged
    else
        munged --force
    fi
    pgrep -n -x munged >"$dir/munged.pid"
    for _ in $(seq 50); do
        munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && return
        sleep 0.1
    done
    echo "local-cluster.sh: munged does not answer" >&2
    exit 1
}

write_conf() {
    local host cpus mem
    host="$(hostname -s)"
    cpus="$(nproc)"
    mem="$(awk '/MemTotal/ { print int($2 / 1024 * 0.8) }' /proc/meminfo)"
    mkdir -p "$dir/state" "$dir/spool" "$dir/log"
    cat >"$conf" <<CONF
ClusterName=sfztest
SlurmctldHost=$host
SlurmctldPort=${SFZ_SLURMCTLD_PORT:-16817}
SlurmdPort=${SFZ_SLURMD_PORT:-16818}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
KillWait=10
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
    # Plugins read cgroup.conf even when unused; an empty one keeps them quiet.
    : >"$dir/cgroup.conf"
}

case "$cmd" in
start)
    install
    start_munge
    write_conf
    slurmctld -c -f "$conf"
    slurmd -f "$conf"
    for _ in $(seq 300); do
        state="$(sinfo -h -o %T 2>/dev/null | head -n1 || true)"
        case "$state" in
        idle* | mixed* | alloc*) echo "export SLURM_CONF=$conf"; exit 0 ;;
        esac
        sleep 0.2
    done
    echo "local-cluster.sh: the node never became idle (state: ${state:-none}); logs in $dir/log" >&2
    exit 1
    ;;
stop)
    scontrol shutdown >/dev/null 2>&1 || true
    for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munged.pid"; do
        [ -s "$pidfile" ] || continue
        pid="$(cat "$pidfile")"
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; kill "$pid" 2>/dev/null || true; sleep 0.1; done
        rm -f "$pidfile"
    done
    ;;
*)
    echo "usage: local-cluster.sh start|stop DIR" >&2
    exit 2
    ;;
esac
