# Slurm beside the cluster benchmark (sourced by side_by_side.sh for --slurm, not run).
# Uses side_by_side.sh's DIR, out, driver, cluster and oq_* helpers.
#
# The shape: a real local Slurm (test/cluster/slurm-up.sh: munged, slurmctld, one slurmd per node,
# slurmrestd with JWT) whose nodes n1..nS are also the kwok nodes bench-node-0..S-1 (label
# onequeue.io/slurm-node: the daemon's slurm.nodeLabel), one shared partition (batch, over every
# Slurm node), and churn for the whole run: one sbatch every --slurm-submit-interval seconds of a
# short job (2 CPUs, 1000 MB, sleep --slurm-job-seconds, time limit 2 min), as the Slurm user.
# Every round (each scheduler) runs with that churn; kube-scheduler and the Slurm-off daemon do not
# see Slurm, which places the jobs itself. After a Slurm-on round everything the daemon wrote is
# undone (jobs cancelled, nodes resumed, the onequeue.io/owner marks removed from the kwok nodes)
# so that every round starts from the same state.

slurm_dir=''
slurm_submitter_pid=''

# slurm_as_user CMD ARGS...: a client command of the cluster as the Slurm user (slurmd runs as
# slurm and starts only slurm's jobs), with a clean environment (sbatch exports it to the job).
slurm_as_user() {
  local cmd=$SLURM_BIN/$1
  shift
  if [ -n "${SLURM_ROOT:-}" ]; then
    (cd "$SLURM_JOBS_DIR" && env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 SLURM_CONF="$SLURM_CONF" \
      ONEQUEUE_SLURM_RUN_AS="$SLURM_USER" "$cmd" "$@")
  else
    (cd "$SLURM_JOBS_DIR" && env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 SLURM_CONF="$SLURM_CONF" \
      HOME="$SLURM_JOBS_DIR" USER="$SLURM_USER" setpriv --reuid="$SLURM_USER" --regid="$SLURM_USER" --init-groups \
      "$cmd" "$@")
  fi
}

# slurm_admin CMD ARGS...: as root (a Slurm admin).
slurm_admin() { SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/$1" "${@:2}"; }

# slurm_bench_up VERSION NODES INTERVAL JOB_SECONDS: the cluster, the node labels, the churn.
slurm_bench_up() {
  local version=$1 nodes=$2 interval=$3 job_seconds=$4
  slurm_dir=$DIR/slurm
  ONEQUEUE_SLURM=$version bash "$cluster/slurm-up.sh" "$slurm_dir" --nodes "$nodes" --owner-pid $$
  # shellcheck disable=SC1091
  source "$slurm_dir/slurm.env"
  export SLURM_CONF
  driver slurm-nodes "$nodes"
  # The churn, in the background for the whole run; stopped by its PID (slurm_bench_down).
  (
    while :; do
      slurm_as_user sbatch --parsable -p "$SLURM_SHARED_PARTITION" -N1 -c2 --mem=1000 -t 2 -o /dev/null \
        --wrap "sleep $job_seconds" >> "$out/slurm-submitted.log" 2>&1 || true
      sleep "$interval"
    done
  ) &
  slurm_submitter_pid=$!
  oq_log "Slurm $SLURM_RELEASE up ($nodes nodes, REST $SLURMRESTD_API); churn: one job every ${interval}s (pid $slurm_submitter_pid)"
  # Let the churn reach its steady state (jobs running, others finishing) before the first round.
  sleep $((job_seconds + 5))
}

slurm_bench_down() {
  if [ -n "$slurm_submitter_pid" ]; then
    kill "$slurm_submitter_pid" 2>/dev/null || true
    wait "$slurm_submitter_pid" 2>/dev/null || true
    slurm_submitter_pid=''
  fi
  if [ -n "$slurm_dir" ]; then bash "$cluster/slurm-down.sh" "$slurm_dir" >/dev/null 2>&1 || true; fi
}

# slurm_onequeue_yaml BASE OUT: the Slurm-off configuration plus the daemon's slurm: block
# (the e2e tests' settings; every other Slurm key at its default: poll every 2 s, lend after 60 s).
# defaultQos: the jobs carry no Slurm QOS, and the default's default, batch, is not in the
# benchmark's QOS table (high, low): the daemon refuses such a configuration (session 37; before,
# every job waited held for good, "QOSNotAllowed").
slurm_onequeue_yaml() {
  cat "$1" > "$2"
  cat >> "$2" <<EOF
slurm:
  enabled: true
  url: "$SLURMRESTD_URL"
  tokenFile: "$SLURM_JWT_FILE"
  user: $SLURM_USER
  apiVersion: $SLURMRESTD_API
  lendMechanism: drain
  sharedPartitions: [$SLURM_SHARED_PARTITION]
  nodeLabel: onequeue.io/slurm-node
  reclaimPartition: $SLURM_RECLAIM_PARTITION
  scontrolPath: "$SLURM_BIN/scontrol"
  slurmConf: "$SLURM_CONF"
  defaultQos: low
EOF
}

# slurm_round_begin: slurmctld's RPC counts and the time, before the scheduler starts.
slurm_round_begin() {
  slurm_admin sdiag > "$out/sdiag-before.txt" 2>&1 || true
  slurm_t0=$(date +%s.%N)
}

metrics_port() {
  sed -n 's/.*serving Prometheus \/metrics on port \([0-9]*\).*/\1/p' "$DIR/logs/bench-$1.log" | tail -n 1
}

# slurm_round_end WHO JSON [PREFIX METRICS_BEFORE]: before the scheduler stops: the jobs submitted
# since the round began (started? how long they waited), slurmctld's RPCs during the round, and for
# onequeue its cycle and poll counters (/metrics) and when its first cycle came (its log).
slurm_round_end() {
  local who=$1 json=$2 port=''
  local t1
  t1=$(date +%s.%N)
  slurm_admin squeue -h -a -t all -o '%i|%V|%S|%T' > "$out/squeue-after.txt" 2>&1 || true
  slurm_admin sdiag > "$out/sdiag-after.txt" 2>&1 || true
  if [[ $who == onequeue* ]]; then
    port=$(metrics_port "$who")
    cp "$DIR/logs/bench-$who.log" "${json%.json}.log"
  fi
  python3 "$here/slurm_stats.py" "$json" "$slurm_t0" "$t1" "$out/sdiag-before.txt" "$out/sdiag-after.txt" \
    "$out/squeue-after.txt" "$port" "${@:3}"
}

# slurm_tail WHO JSON SECONDS: the daemon kept running SECONDS after its round (every pod bound,
# the churn on): the same figures as tail_*, the steady state of a daemon beside a busy Slurm
# (the round itself is a few seconds and includes the daemon's start: its first poll and fences).
slurm_tail() {
  local who=$1 json=$2 seconds=$3
  python3 "$here/slurm_stats.py" --metrics "$(metrics_port "$who")" "$out/metrics-before.json"
  slurm_round_begin
  sleep "$seconds"
  slurm_round_end "$who" "$json" tail_ "$out/metrics-before.json"
  # Why jobs still wait (onequeue's reason is their AdminComment), and who holds each node.
  {
    slurm_admin sinfo -N -h -o '%N %T %E'
    slurm_admin squeue -h -t PD -o %i | head -n 5 | while read -r id; do slurm_admin scontrol show job "$id"; done
  } > "${json%.json}.slurm-at-end.txt" 2>&1 || true
}

# slurm_bench_reset NODES: what a Slurm-on daemon wrote, undone (its drains, holds, marks).
slurm_bench_reset() {
  local nodes=$1
  local node state
  slurm_admin scancel -u "$SLURM_USER" >/dev/null 2>&1 || true
  # One by one: a resume of a node that is not drained is an error.
  slurm_admin sinfo -h -N -o '%N %T' 2>/dev/null | while read -r node state; do
    case $state in drain* | *drain*) slurm_admin scontrol update "nodename=$node" state=resume >/dev/null 2>&1 || true ;; esac
  done
  driver slurm-reset "$nodes"
  # The churn refills the nodes before the next round.
  sleep 8
}
