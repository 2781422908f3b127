#!/usr/bin/env bash
# onequeue vs kube-scheduler on the same apiserver, side by side (run by hand, never by make test):
#   test/bench/cluster/side_by_side.sh DIR [--nodes N] [--pods N] [--rounds R]
#       [--workloads basic,preemption,gang] [--preemptors N] [--preemptor-cpu CPU] [--gang-size G]
#       [--qps Q] [--burst B] [--onequeue BIN] [--backlog] [--no-ceiling] [--ceiling-inflight K]
#       [--raw-rounds] [--http-client curl|nghttp2]
#       [--slurm 22.05|24.11|26.05] [--slurm-nodes S] [--slurm-submit-interval SEC] [--slurm-job-seconds SEC]
#       [--slurm-tail SEC]
# --http-client (default curl): the daemon's kubernetes.httpClient, and the client that measures
# the raw binding ceiling and --raw-rounds.
# Starts a local control plane in DIR (test/cluster/up.sh DIR --kwok --bench: no max-inflight, no
# priority and fairness, as scheduler_perf does), creates N kwok nodes (4 CPU, 32 GiB, 110 pods,
# labelled onequeue.io/pool=bench) and the PriorityClasses low and high, then runs each workload R
# times for each scheduler, alternating (odd rounds kube-scheduler first, even rounds onequeue
# first). Each round starts the scheduler fresh, waits until it has synced, runs the workload, then
# stops the scheduler and deletes the pods; both schedulers get the same client QPS and burst.
# Workloads (scheduler_perf's shapes; pods created by 32 client threads):
#   basic       SchedulingBasic: --pods pods of cpu 100m, memory 500Mi.
#   preemption  PreemptionBasic: the pool is filled with 4 low-priority pods per node (900m, 500Mi;
#               PriorityClass low, onequeue.io/qos low) by the scheduler under test (not measured),
#               then --preemptors (default N) high-priority pods (--preemptor-cpu, default
#               scheduler_perf's 3000m: each needs 3 victims; 900m: exactly one; PriorityClass
#               high, onequeue.io/qos high, a QOS that may preempt low) are created and measured.
#   gang        onequeue alone (kube-scheduler 1.34 has no gang): --pods basic pods in groups of
#               --gang-size (8), onequeue.io/group and onequeue.io/group-size.
# --backlog (basic and gang): the pods are created before the scheduler starts and the clock starts
# when it has synced: the scheduler's own throughput, not bounded by the pod creation rate (in the
# default streaming mode a scheduler can bind no faster than the pods arrive); latency is then not
# reported (every pod waited for the start). The preemption workload always streams.
# Per round (bench_driver.py): pods/s and p50/p99 creation->binding latency from the API's own
# timestamps (creationTimestamp, PodScheduled lastTransitionTime: one-second resolution) and from a
# watch (milliseconds); the scheduler's CPU-seconds per 1,000 pods bound (utime+stime from
# /proc/PID/stat over getconf CLK_TCK, from sync, or for preemption from the end of the fill, to the
# last binding, and again until the scheduler's Scheduled events for the round's pods are all
# written: every workload's round ends only then, bench_driver.py events) and peak RSS (VmHWM of /proc/PID/status: the whole life of the process, the fill
# included); victims per preemptor; the apiserver's own request counts and mean server-side
# latency per verb and resource during the round (apiserver_request_duration_seconds; all clients:
# the pod creator and kwok too). BENCH_ROUND_TIMEOUT (s, default 600) bounds each round and each
# fill; a round that does not bind everything is reported with its pods' reasons (and bound pods
# whose PodScheduled condition is not True), not dropped.
# After the rounds the cluster is stopped and the raw binding ceiling is measured
# (k8s_binding_throughput_bench: N nodes, --pods pods, --ceiling-inflight (5000) in flight, no
# scheduler, on a fresh local cluster) unless --no-ceiling.
# --raw-rounds (basic backlog only): each round also binds the same backlog with no scheduler
# (k8s_bind_existing_bench: the daemon's client, --ceiling-inflight in flight, round-robin) on this
# cluster, kwok running and the bench's watch open, timed by bench_driver.py as the schedulers are
# (the clock starts at its first binding): the ceiling under the rounds' conditions, reported
# beside the fresh cluster's (odd rounds after both schedulers, even rounds before them).
# --slurm VERSION: a real local Slurm of that version beside the cluster (test/cluster/slurm-up.sh in
# DIR/slurm, stopped by its recorded PIDs at the end), its S nodes (--slurm-nodes, default 32) also
# the kwok nodes bench-node-0..S-1 (8 CPUs each, as the Slurm nodes), with churn for the whole run (one short job every
# --slurm-submit-interval seconds, default 1, each sleeping --slurm-job-seconds, default 5), and a
# third scheduler each round: onequeue-slurm, the same daemon configured with slurmrestd (its Slurm
# jobs of the partition batch in the same queue; test/bench/cluster/slurm_side.sh). Every round
# then also records the Slurm jobs submitted during it (started? waited how long?), slurmctld's
# RPCs per minute (sdiag), and for onequeue its full and arrival cycles (/metrics); the Slurm-on
# daemon is then kept running --slurm-tail seconds (default 90: past the 60 s a started daemon
# waits before it lends an idle node; its CPU figures are taken before)
# and the same is recorded for that steady state (tail_* keys). After a Slurm-on round what the
# daemon wrote (drains, holds, node marks) is undone. Without --slurm nothing of this runs.
# Writes DIR/bench/WORKLOAD-SCHEDULER-ROUND.json, DIR/bench/WORKLOAD-bound_over_time.{csv,png},
# DIR/bench/ceiling.json and prints a table per workload with the ratios onequeue/kube-scheduler
# (bench_summary.py). The machine is shared: quote the ratios of one run, not the absolute figures.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
cluster=$repo/test/cluster
# shellcheck source=../../cluster/lib.sh
source "$cluster/lib.sh"

usage() { sed -n '2,5p' "$0" >&2; exit 2; }
[ $# -ge 1 ] || usage
DIR=$1
shift
nodes=500 pods=2000 rounds=3 qps=5000 burst=5000 backlog=false
workloads=basic,preemption,gang preemptors='' preemptor_cpu=3000m gang_size=8
ceiling=true ceiling_inflight=5000 raw_rounds=false http_client=curl
slurm_version='' slurm_nodes=32 slurm_interval=1 slurm_job_seconds=5 slurm_tail_seconds=90
oq_bin=$repo/build/src/scheduler/onequeue-scheduler
ceiling_bin=$repo/build/test/bench/k8s/k8s_binding_throughput_bench
raw_bin=$repo/build/test/bench/k8s/k8s_bind_existing_bench
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) nodes=$2; shift 2 ;;
    --pods) pods=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    --preemptors) preemptors=$2; shift 2 ;;
    --preemptor-cpu) preemptor_cpu=$2; shift 2 ;;
    --gang-size) gang_size=$2; shift 2 ;;
    --qps) qps=$2; shift 2 ;;
    --burst) burst=$2; shift 2 ;;
    --onequeue) oq_bin=$2; shift 2 ;;
    --backlog) backlog=true; shift ;;
    --no-ceiling) ceiling=false; shift ;;
    --ceiling-inflight) ceiling_inflight=$2; shift 2 ;;
    --raw-rounds) raw_rounds=true; shift ;;
    --http-client) http_client=$2; shift 2 ;;
    --slurm) slurm_version=$2; shift 2 ;;
    --slurm-nodes) slurm_nodes=$2; shift 2 ;;
    --slurm-submit-interval) slurm_interval=$2; shift 2 ;;
    --slurm-job-seconds) slurm_job_seconds=$2; shift 2 ;;
    --slurm-tail) slurm_tail_seconds=$2; shift 2 ;;
    *) usage ;;
  esac
done
preemptors=${preemptors:-$nodes}
case $slurm_version in '' | 22.05 | 24.11 | 26.05) ;; *) oq_die "unknown --slurm $slurm_version (22.05, 24.11, 26.05)" ;; esac
if [ -n "$slurm_version" ] && [ "$slurm_nodes" -gt "$nodes" ]; then oq_die "--slurm-nodes is over --nodes"; fi
case $http_client in curl|nghttp2) ;; *) oq_die "unknown --http-client $http_client (curl, nghttp2)" ;; esac
# Always named: the daemon's default (auto) is nghttp2 where no proxy variable is set. The raw
# binding ceiling and --raw-rounds bind with the same client (ONEQUEUE_BENCH_CLIENT).
oq_http_client=", httpClient: $http_client"
export ONEQUEUE_BENCH_CLIENT=$http_client
for w in ${workloads//,/ }; do
  case $w in basic|preemption|gang) ;; *) oq_die "unknown workload $w (basic, preemption, gang)" ;; esac
done
if [[ ,$workloads, == *,gang,* ]] && [ $((pods % gang_size)) -ne 0 ]; then
  oq_die "--pods must be a multiple of --gang-size for the gang workload"
fi
[ -x "$oq_bin" ] || oq_die "missing $oq_bin (build it: /work/oqbuild --target onequeue-scheduler)"
if $ceiling && [ ! -x "$ceiling_bin" ]; then
  oq_die "missing $ceiling_bin (build it: /work/oqbuild --target k8s_binding_throughput_bench; or --no-ceiling)"
fi
if $raw_rounds; then
  [ -x "$raw_bin" ] || oq_die "missing $raw_bin (build it: oq-build build k8s_bind_existing_bench)"
  { $backlog && [ "$workloads" = basic ]; } || oq_die "--raw-rounds needs --backlog --workloads basic"
fi
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
bin=$(bash "$cluster/build-upstream.sh" | tail -n 1)
[ -x "$bin/kube-scheduler" ] || oq_die "missing $bin/kube-scheduler (build-upstream.sh)"
export ONEQUEUE_UPSTREAM_BIN=$bin
export BENCH_PREEMPTOR_CPU=$preemptor_cpu BENCH_GANG_SIZE=$gang_size

out=$DIR/bench
driver() { python3 "$here/bench_driver.py" "$DIR" "$@"; }
if [ -n "$slurm_version" ]; then
  # shellcheck source=slurm_side.sh
  source "$here/slurm_side.sh"
  trap 'slurm_bench_down; bash "$cluster/down.sh" "$DIR" >/dev/null 2>&1 || true' EXIT
else
  trap 'bash "$cluster/down.sh" "$DIR" >/dev/null 2>&1 || true' EXIT
fi
bash "$cluster/up.sh" "$DIR" --kwok --bench
rm -rf "$out"
mkdir -p "$out"
if [ -n "$slurm_version" ]; then export BENCH_SLURM_NODES=$slurm_nodes; fi
driver nodes "$nodes" bench
schedulers=kube-scheduler,onequeue
if [ -n "$slurm_version" ]; then
  slurm_bench_up "$slurm_version" "$slurm_nodes" "$slurm_interval" "$slurm_job_seconds"
  schedulers=kube-scheduler,onequeue,onequeue-slurm
fi

# Scheduler configurations: the same client QPS and burst for both. onequeue's QOS table: high may
# preempt low (kube-scheduler needs nothing more: the PriorityClasses' values order the pods and
# its DefaultPreemption plugin is on by default).
cat > "$out/kube-scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: "$DIR/kube-scheduler.kubeconfig", qps: $qps, burst: $burst}
leaderElection: {leaderElect: false}
EOF
cat > "$out/onequeue.yaml" <<EOF
apiVersion: onequeue.io/v1alpha1
kind: SchedulerConfiguration
schedulerName: onequeue
poolLabel: "onequeue.io/pool=bench"
kubernetes: {kubeconfig: "$DIR/scheduler.kubeconfig", qps: $qps, burst: $burst$oq_http_client}
queue:
  reservationDepth: 10
  resolutionSeconds: 60
  qos:
    - {name: high, priority: 1000, canPreempt: true, preemptible: false}
    - {name: low, priority: 0, preemptible: true}
server: {grpcAddress: "127.0.0.1:0", metricsAddress: "127.0.0.1:0"}
leaderElection: {enabled: false}
EOF
if [ -n "$slurm_version" ]; then slurm_onequeue_yaml "$out/onequeue.yaml" "$out/onequeue-slurm.yaml"; fi
pki=$DIR/pki
# Copies, so that a rebuild of the tree during the run does not change what is measured.
cp "$oq_bin" "$out/onequeue-scheduler"
oq_bin=$out/onequeue-scheduler
if $raw_rounds; then
  cp "$raw_bin" "$out/k8s_bind_existing_bench"
  raw_bin=$out/k8s_bind_existing_bench
fi
if $ceiling; then
  cp "$ceiling_bin" "$out/k8s_binding_throughput_bench"
  ceiling_bin=$out/k8s_binding_throughput_bench
fi

# start_scheduler WHO: starts it as a component of DIR (down.sh stops it too) and waits until it
# has synced its informers.
start_scheduler() {
  local who=$1 port
  if [ -n "$slurm_version" ]; then slurm_round_begin; fi
  case $who in
    kube-scheduler)
      port=$(oq_free_port)
      oq_write_args "$DIR" bench-kube-scheduler "$bin/kube-scheduler" --config="$out/kube-scheduler.yaml" \
        --authentication-kubeconfig="$DIR/kube-scheduler.kubeconfig" \
        --authorization-kubeconfig="$DIR/kube-scheduler.kubeconfig" \
        --bind-address=127.0.0.1 --secure-port="$port" \
        --tls-cert-file="$pki/serving.crt" --tls-private-key-file="$pki/serving.key"
      oq_start "$DIR" bench-kube-scheduler
      # /readyz includes sched-handler-sync: the informers have synced.
      oq_wait_for "$DIR" bench-kube-scheduler 120 oq_https_ok "$pki/ca.crt" "https://127.0.0.1:$port/readyz" ||
        { oq_tail_log "$DIR" bench-kube-scheduler; oq_die "kube-scheduler not ready"; }
      ;;
    onequeue|onequeue-slurm)
      oq_write_args "$DIR" "bench-$who" "$oq_bin" --config "$out/$who.yaml"
      oq_start "$DIR" "bench-$who"
      synced() { grep -q "informers synced" "$DIR/logs/bench-$who.log"; }
      oq_wait_for "$DIR" "bench-$who" 120 synced ||
        { oq_tail_log "$DIR" "bench-$who"; oq_die "onequeue-scheduler not ready"; }
      ;;
  esac
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
clk=$(getconf CLK_TCK)

# run_round WORKLOAD WHO R: one measured round; writes $out/WORKLOAD-WHO-R.json (and keeps the
# scheduler's log beside it).
run_round() {
  local workload=$1 who=$2 r=$3 name shape fill_ok=true rc=0 pid c0 c1 c_bound= hwm since
  local json=$out/$workload-$who-$r.json
  [ "$who" = kube-scheduler ] && name=default-scheduler || name=onequeue  # onequeue-slurm too
  : > "$DIR/logs/bench-$who.log"
  case $workload in
    basic|gang)
      [ "$workload" = gang ] && shape=gang || shape=basic
      if $backlog; then
        # The pods wait before the scheduler starts; the clock starts when it has synced.
        driver create bench "$name" "$pods" --shape "$shape"
        driver requests "$out/requests-before.json"
        start_scheduler "$who"
        since=$(date +%s.%N)
        pid=$(oq_pid "$DIR" "bench-$who")
        c0=$(cpu_ticks "$pid")
        driver round bench "$name" "$pods" "$json" --since "$since" --shape "$shape" \
          --requests-before "$out/requests-before.json" || rc=$?
        # The scheduler's CPU and the round end when its Scheduled events are written too (onequeue
        # writes them after its bindings, a few at a time).
        c_bound=$(cpu_ticks "$pid")
        driver events bench "$name" "$pods" "${since%.*}" "$json" || rc=$?
      else
        start_scheduler "$who"
        pid=$(oq_pid "$DIR" "bench-$who")
        sleep 1
        c0=$(cpu_ticks "$pid")
        since=$(date +%s)
        driver round bench "$name" "$pods" "$json" --shape "$shape" || rc=$?
        c_bound=$(cpu_ticks "$pid")
        driver events bench "$name" "$pods" "$since" "$json" || rc=$?
      fi
      ;;
    preemption)
      # The scheduler under test fills the pool (scheduler_perf's initPods), then the clock and the
      # CPU count start and the preemptors are created.
      start_scheduler "$who"
      pid=$(oq_pid "$DIR" "bench-$who")
      driver fill bench-low "$name" $((4 * nodes)) || fill_ok=false
      c0=$(cpu_ticks "$pid")
      since=$(date +%s)
      driver round bench "$name" "$preemptors" "$json" --shape high --victims-ns bench-low || rc=$?
      # As for basic and gang: the CPU and the round end when the preemptors' Scheduled events are
      # written too.
      c_bound=$(cpu_ticks "$pid")
      driver events bench "$name" "$preemptors" "$since" "$json" || rc=$?
      ;;
  esac
  if [ -n "$slurm_version" ]; then slurm_round_end "$who" "$json"; fi
  c1=$(cpu_ticks "$pid")
  hwm=$(awk '/VmHWM/{print $2}' "/proc/$pid/status")
  if [ "$who" = onequeue-slurm ] && [ "$slurm_tail_seconds" -gt 0 ]; then slurm_tail "$who" "$json" "$slurm_tail_seconds"; fi
  oq_stop "$DIR" "bench-$who" 20
  python3 - "$json" "$((c1 - c0))" "$clk" "$hwm" "$(uptime | sed 's/.*load average: //')" "$fill_ok" "$((${c_bound:-$c1} - c0))" <<'EOF'
import json, sys
p, ticks, clk, hwm, load, fill_ok = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6]
bound_ticks = int(sys.argv[7])
d = json.load(open(p))
d["cpu_seconds_per_1000_pods_to_last_binding"] = round(bound_ticks / clk / d["bound"] * 1000, 3) if d["bound"] else float("nan")
d["cpu_seconds"] = ticks / clk
d["cpu_seconds_per_1000_pods"] = round(ticks / clk / d["bound"] * 1000, 3) if d["bound"] else float("nan")
d["peak_rss_mib"] = round(hwm / 1024, 1)
d["load_average"] = load
d["fill_complete"] = fill_ok == "true"
json.dump(d, open(p, "w"))
EOF
  echo "round $r $workload $who: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d.pop('bound_over_time'); print(d)" "$json")" >&2
  $fill_ok || oq_log "round $r $workload $who: the pool was not filled with low-priority pods (see $out/$workload-$who-$r.log)"
  [ "$rc" -eq 0 ] || oq_log "round $r $workload $who: not every pod was bound (see $out/$workload-$who-$r.log)"
  cp "$DIR/logs/bench-$who.log" "$out/$workload-$who-$r.log"
  driver cleanup bench bench-low
  if [ "$who" = onequeue-slurm ]; then slurm_bench_reset "$slurm_nodes"; fi
}

# run_raw_round R: the backlog bound by k8s_bind_existing_bench, no scheduler (--raw-rounds);
# writes $out/basic-raw-R.json with its RESULT line.
run_raw_round() {
  local r=$1 json=$out/basic-raw-$1.json start=$out/raw-start-$1 rc=0 bpid
  rm -f "$start"
  driver create bench raw "$pods" --shape basic
  driver requests "$out/requests-before.json"
  "$raw_bin" "$DIR/scheduler.kubeconfig" bench "$pods" "$nodes" "$ceiling_inflight" "$start" \
    > "$out/basic-raw-$r.log" 2>&1 &
  bpid=$!
  while [ ! -s "$start" ] && kill -0 "$bpid" 2>/dev/null; do sleep 0.01; done
  driver round bench raw "$pods" "$json" --since "$(cat "$start")" --shape basic \
    --requests-before "$out/requests-before.json" || rc=$?
  wait "$bpid" || rc=$?
  python3 - "$json" "$out/basic-raw-$r.log" "$(uptime | sed 's/.*load average: //')" <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
m = re.search(r"^RESULT (.*)$", open(sys.argv[2]).read(), re.M)
d["binder"] = m.group(1) if m else "no RESULT"
d["load_average"] = sys.argv[3]
json.dump(d, open(sys.argv[1], "w"))
EOF
  echo "round $r basic raw: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d.pop('bound_over_time'); print(d)" "$json")" >&2
  [ "$rc" -eq 0 ] || oq_log "round $r basic raw: not every pod was bound (see $out/basic-raw-$r.log)"
  driver cleanup bench bench-low
}

for workload in ${workloads//,/ }; do
  for r in $(seq 1 "$rounds"); do
    if [ "$workload" = gang ]; then
      order=onequeue
    elif [ $((r % 2)) -eq 1 ]; then
      order="kube-scheduler onequeue"
      if [ -n "$slurm_version" ]; then order="$order onequeue-slurm"; fi
      if $raw_rounds; then order="$order raw"; fi
    else
      order="onequeue kube-scheduler"
      if [ -n "$slurm_version" ]; then order="onequeue-slurm $order"; fi
      if $raw_rounds; then order="raw $order"; fi
    fi
    for who in $order; do
      if [ "$who" = raw ]; then run_raw_round "$r"; else run_round "$workload" "$who" "$r"; fi
    done
  done
done

if $ceiling; then
  # The raw binding ceiling of this machine now: no scheduler, every pod bound round-robin by one
  # client with K requests in flight, on a fresh local cluster of the same shape (this one is
  # stopped first so that the two do not share the cores).
  bash "$cluster/down.sh" "$DIR" >/dev/null 2>&1 || true
  ONEQUEUE_BENCH_NODES=$nodes ONEQUEUE_BENCH_PODS=$pods ONEQUEUE_BENCH_INFLIGHT=$ceiling_inflight \
    "$ceiling_bin" > "$out/ceiling.log" 2>&1 || oq_log "the ceiling bench failed: $out/ceiling.log"
  python3 - "$out" <<'EOF'
import json, re, sys
out = sys.argv[1]
m = re.search(r"^RESULT (.*= ([0-9.]+) pods/s.*)$", open(f"{out}/ceiling.log").read(), re.M)
if m:
    json.dump({"pods_per_second": float(m.group(2)), "line": m.group(1)}, open(f"{out}/ceiling.json", "w"))
EOF
fi

mode=stream
if $backlog; then mode=backlog; fi
for workload in ${workloads//,/ }; do
  case $workload in
    basic) who=$schedulers title="SchedulingBasic ($mode): $nodes nodes, $pods pods" ;;
    preemption) who=$schedulers
      title="Preemption (stream): $nodes nodes filled with $((4 * nodes)) low-priority pods, $preemptors preemptors of cpu $preemptor_cpu" ;;
    gang) who=onequeue title="Gang ($mode, onequeue alone): $nodes nodes, $pods pods in groups of $gang_size" ;;
  esac
  python3 "$here/bench_summary.py" "$out" "$workload" "$rounds" "$who" \
    "$title; $rounds rounds, client qps $qps burst $burst${slurm_version:+; Slurm $slurm_version beside it ($slurm_nodes shared nodes, a ${slurm_job_seconds}s job every ${slurm_interval}s)}"
done
if [ -f "$out/ceiling.json" ]; then
  python3 - "$out" <<'EOF'
import glob, json, statistics, sys
out = sys.argv[1]
c = json.load(open(f"{out}/ceiling.json"))
print(f"\nraw binding ceiling (k8s_binding_throughput_bench): {c['pods_per_second']:g} pods/s ({c['line']})")
for w in ("basic", "gang"):
    rs = [json.load(open(p))["pods_per_second_api"] for p in glob.glob(f"{out}/{w}-onequeue-[0-9]*.json")]
    if rs:
        m = statistics.median(rs)
        print(f"  onequeue {w}: {m:g} pods/s (API timestamps, median) = {m / c['pods_per_second']:.2f} of the ceiling")
EOF
fi
if $raw_rounds; then
  python3 - "$out" "$rounds" <<'EOF'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
raw = [json.load(open(f"{out}/basic-raw-{r}.json")) for r in range(1, rounds + 1)]
oq = [json.load(open(f"{out}/basic-onequeue-{r}.json")) for r in range(1, rounds + 1)]
print("\nraw binding under the rounds' conditions (k8s_bind_existing_bench on this cluster, kwok and the watch on):")
for r, d in enumerate(raw, 1):
    print(f"  round {r}: API {d['pods_per_second_api']} / watch {d['pods_per_second_watch']} pods/s, bound {d['bound']}; {d['binder']}")
for key, name in (("pods_per_second_api", "API timestamps"), ("pods_per_second_watch", "watch")):
    m_raw, m_oq = statistics.median(d[key] for d in raw), statistics.median(d[key] for d in oq)
    print(f"  {name}: raw {m_raw:g} pods/s (median), onequeue {m_oq:g} = {m_oq / m_raw:.2f} of it")
EOF
fi
