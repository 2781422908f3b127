#!/usr/bin/env bash
# Stops the Slurm cluster that test/cluster/slurm-up.sh started in DIR: cancels every job and waits
# for them to leave, stops slurmrestd, the slurmd's, slurmctld and munged by their recorded PIDs
# (TERM, bounded wait, KILL), kills job processes of this cluster that outlived their slurmd, and
# releases the cluster's ports. Idempotent; logs stay in DIR/logs.
# Usage: test/cluster/slurm-down.sh DIR
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=slurm/lib.sh
source "$HERE/slurm/lib.sh"

# Started by the watchdog, this script carries the cluster's marker: keep it off our children.
unset ONEQUEUE_SLURM_DIR ONEQUEUE_SLURM_WATCHDOG
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
[ -d "$1" ] || exit 0
slurm_set_paths "$(cd "$1" && pwd)"
CLUSTER_NAME=""
SLURM_ROOT=""
# shellcheck disable=SC1090
[ -f "$SLURM_PORTS_FILE" ] && source "$SLURM_PORTS_FILE"

no_jobs_left() { [ -z "$(sl squeue -h -o %A 2>/dev/null)" ] && sl squeue -h >/dev/null 2>&1; }

if [ -f "$SLURM_CONF_FILE" ] && slurmctld_up 2>/dev/null; then
  jobs="$(sl squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ')"
  if [ -n "${jobs// /}" ]; then
    # shellcheck disable=SC2086
    sl scancel $jobs 2>/dev/null || true
    wait_until 30 "jobs to leave the queue after scancel" no_jobs_left || log "jobs still listed; their processes are killed below"
  fi
fi

# The watchdog runs this script itself when the test binary dies: never signal ourselves.
if [ "$(read_pid watchdog)" != "$$" ]; then stop_pids watchdog; fi
stop_pids slurmrestd
slurmds=()
for f in "$SLURM_PIDS"/slurmd-*.pid; do
  case "$f" in *.daemon.pid) continue ;; esac
  [ -f "$f" ] && slurmds+=("$(basename "$f" .pid)")
done
[ ${#slurmds[@]} -gt 0 ] && stop_pids "${slurmds[@]}"
stop_pids slurmctld
stop_pids munged

# Our own subshells keep the environment bash started with (the watchdog's marker included): skip
# our session (the daemons, slurmstepd and jobs each run in sessions of their own).
MY_SESSION="$(ps -o sid= -p $$ | tr -d ' ')"
# Job processes and slurmstepd really run on the host and outlive their slurmd. Job processes
# carry SLURM_CLUSTER_NAME of this cluster; slurmstepd overwrites its environment (process title)
# but listens on a unix socket in this cluster's spool folder; the daemons carry the marker.
leftovers() {
  {
    local patterns=(-e "ONEQUEUE_SLURM_DIR=$SLURM_DIR")
    [ -n "$CLUSTER_NAME" ] && patterns+=(-e "SLURM_CLUSTER_NAME=$CLUSTER_NAME")
    grep -lzxF "${patterns[@]}" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3
    ss -Hxlp 2>/dev/null | grep -F " $SLURM_DIR/spool/" | grep -o 'pid=[0-9]*' | cut -d= -f2
    # A Slurm in a root filesystem: whatever runs in this cluster's mount namespace under that root
    # (slurmstepd and job processes too), but not the namespace's holder, stopped last.
    namespace_pids
  } | sort -u | grep -vx "$(read_pid mountns || echo none)" | while read -r pid; do
    [ "$pid" != "$$" ] && [ "$(ps -o sid= -p "$pid" 2>/dev/null | tr -d ' ')" != "$MY_SESSION" ] &&
      pid_alive "$pid" && echo "$pid"
  done
}
left="$(leftovers | tr '\n' ' ')"
if [ -n "${left// /}" ]; then
  log "killing leftover processes of this cluster: $left"
  # shellcheck disable=SC2086
  kill -KILL $left 2>/dev/null || true
  no_leftovers() { [ -z "$(leftovers)" ]; }
  wait_until 10 "leftover processes to exit" no_leftovers || log "still alive: $(leftovers | tr '\n' ' ')"
fi

# Last, the holder of the mount namespace: with it goes the last process of the namespace, and its
# mounts (the cluster folder, /proc, /dev, /sys in the root filesystem) with them.
if [ -n "$SLURM_ROOT" ]; then
  stop_pids mountns
  left="$(namespace_pids | tr '\n' ' ')"
  if [ -n "${left// /}" ]; then
    log "killing processes left in the mount namespace: $left"
    # shellcheck disable=SC2086
    kill -KILL $left 2>/dev/null || true
  fi
fi

rm -f "$SLURM_ENV_FILE" "$SLURM_DIR/rest/slurmrestd.socket" "$SLURM_PIDS/watchdog.pid"

# Nothing may listen on the cluster's ports any more; checked before the claim is released, so no
# other cluster can have taken one of them in between.
rc=0
if [ -f "$SLURM_DIR/.port-claim" ] && [ -f "$(cat "$SLURM_DIR/.port-claim")" ]; then
  read -r first last _ <"$(cat "$SLURM_DIR/.port-claim")"
  cluster_listening() {
    listening="$(ss -Hltn 2>/dev/null | awk '{print $4}' | sed 's/.*://' |
      awk -v a="$first" -v b="$last" '$1 >= a && $1 <= b' | sort -un | tr '\n' ' ')"
    listening="$(echo $listening)"
    [ -n "${listening// /}" ]
  }
  # A daemon that was signalled may close its socket a moment after its process is reaped (seen
  # with slurmrestd after a 10,000-job benchmark): wait a bounded while before calling it a leak.
  for _ in $(seq 50); do cluster_listening || break; sleep 0.1; done
  if [ -n "${listening// /}" ]; then
    log "ERROR: ports of this cluster still listening after stop: $listening"
    ss -Hltnp 2>/dev/null | grep -E ":(${listening// /|})\b" >&2 || true
    rc=1
  fi
fi
release_ports
exit "$rc"
