#!/usr/bin/env bash
# Stops, starts or restarts ONE daemon of a cluster started by test/cluster/slurm-up.sh, with the
# same configuration and port (the port stays claimed while the daemon is down).
# Usage: test/cluster/slurm-daemon.sh DIR stop|start|restart slurmrestd|slurmctld|slurmd:nK
#   start waits until the daemon answers (slurmrestd: /diag with the token; slurmctld: scontrol
#   ping; slurmd: its node is no longer down). slurmctld recovers its jobs from DIR/state.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=slurm/lib.sh
source "$HERE/slurm/lib.sh"

[ $# -eq 3 ] || { sed -n '2,6p' "${BASH_SOURCE[0]}" >&2; exit 2; }
[ -f "$1/ports.env" ] || die "$1 holds no cluster started by slurm-up.sh (no ports.env)"
slurm_set_paths "$(cd "$1" && pwd)"
# shellcheck disable=SC1090
source "$SLURM_PORTS_FILE"
# Clusters started before slurm-up.sh took --slurm ran Debian's 22.05 with these.
: "${REST_PLUGINS:=openapi/v0.0.38,openapi/v0.0.37}" "${REST_API:=v0.0.38}"
VERB="$2"
DAEMON="$3"

node_responding() {
  local state
  state="$(sl sinfo -h -N -n "$1" -p batch -o %T)"
  [ -n "$state" ] && [[ "$state" != *'*' ]] && [[ "$state" != down* ]]
}

stop_one() {
  case "$DAEMON" in
    slurmrestd | slurmctld) stop_pids "$DAEMON" ;;
    slurmd:*) stop_pids "slurmd-${DAEMON#slurmd:}" ;;
    *) die "unknown daemon '$DAEMON' (slurmrestd, slurmctld or slurmd:NODE)" ;;
  esac
}

start_one() {
  case "$DAEMON" in
    slurmrestd)
      pid_alive "$(read_pid slurmrestd)" && die "slurmrestd is already running"
      start_slurmrestd ;;
    slurmctld)
      pid_alive "$(read_pid slurmctld)" && die "slurmctld is already running"
      # -R: recover the whole saved state, partitions made with `scontrol create` included (a
      # site's are in slurm.conf); without it a restart drops the tests' partitions and kills
      # their jobs ("Invalid partition").
      start_slurmctld -R ;;
    slurmd:*)
      local node="${DAEMON#slurmd:}"
      [[ " $NODES " == *" $node "* ]] || die "no node '$node' in this cluster ($NODES)"
      pid_alive "$(read_pid "slurmd-$node")" && die "slurmd of $node is already running"
      start_slurmd "$node"
      wait_until 30 "node $node responding" node_responding "$node" ;;
    *) die "unknown daemon '$DAEMON' (slurmrestd, slurmctld or slurmd:NODE)" ;;
  esac
}

case "$VERB" in
  stop) stop_one ;;
  start) start_one || { show_log_tails; exit 1; } ;;
  restart) stop_one; start_one || { show_log_tails; exit 1; } ;;
  *) die "unknown verb '$VERB' (stop, start or restart)" ;;
esac
