#!/usr/bin/env bash
# onequeue vs kube-scheduler on the same apiserver, side by side (run by hand, never by make test):
#   /work/oqe2e test/bench/cluster/side_by_side.sh DIR [--nodes N] [--pods N] [--rounds R]
#       [--qps Q] [--burst B] [--onequeue BIN] [--backlog]
# Starts a local control plane in DIR (test/cluster/up.sh DIR --kwok --bench: no max-inflight, no
# priority and fairness, as scheduler_perf does), creates N kwok nodes (4 CPU, 32 GiB, 110 pods,
# labelled onequeue.io/pool=bench), then runs scheduler_perf's SchedulingBasic shape (pods of cpu
# 100m, memory 500Mi, created as fast as 32 client threads can) R times for each scheduler,
# alternating (odd rounds kube-scheduler first, even rounds onequeue first). Each round starts the
# scheduler fresh, waits until it has synced, creates the pods, waits until all are bound, then
# stops the scheduler and deletes the pods; both schedulers get the same client QPS and burst.
# --backlog: the pods are created before the scheduler starts and the clock starts when it has
# synced: the scheduler's own throughput, not bounded by how fast the pods can be created (in the
# default streaming mode a scheduler can bind no faster than the pods arrive); latency is then
# not reported (every pod waited for the start).
# Per round (bench_driver.py): pods/s and p50/p99 creation->binding latency from the API's own
# timestamps (creationTimestamp, PodScheduled lastTransitionTime: one-second resolution) and from a
# watch (milliseconds); the scheduler's CPU-seconds per 1,000 pods (utime+stime from
# /proc/PID/stat, from sync to the last binding) and peak RSS (VmHWM). Writes DIR/bench/*.json,
# DIR/bench/bound_over_time.csv and prints a table with the ratios onequeue/kube-scheduler.
# The machine is shared: quote the ratios of one run, not the absolute figures.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
cluster=$repo/test/cluster
# shellcheck source=../../cluster/lib.sh
source "$cluster/lib.sh"

usage() { sed -n '2,4p' "$0" >&2; exit 2; }
[ $# -ge 1 ] || usage
DIR=$1
shift
nodes=500 pods=2000 rounds=3 qps=5000 burst=5000 backlog=false
oq_bin=$repo/build/src/scheduler/onequeue-scheduler
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) nodes=$2; shift 2 ;;
    --pods) pods=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --qps) qps=$2; shift 2 ;;
    --burst) burst=$2; shift 2 ;;
    --onequeue) oq_bin=$2; shift 2 ;;
    --backlog) backlog=true; shift ;;
    *) usage ;;
  esac
done
[ -x "$oq_bin" ] || oq_die "missing $oq_bin (build it: /work/oqbuild --target onequeue-scheduler)"
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
bin=$(bash "$cluster/build-upstream.sh" | tail -n 1)
[ -x "$bin/kube-scheduler" ] || oq_die "missing $bin/kube-scheduler (build-upstream.sh)"
export ONEQUEUE_UPSTREAM_BIN=$bin

trap 'bash "$cluster/down.sh" "$DIR" >/dev/null 2>&1 || true' EXIT
bash "$cluster/up.sh" "$DIR" --kwok --bench
out=$DIR/bench
rm -rf "$out"
mkdir -p "$out"
driver() { python3 "$here/bench_driver.py" "$DIR" "$@"; }
driver nodes "$nodes" bench

# Scheduler configurations: the same client QPS and burst for both.
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
kubernetes: {kubeconfig: "$DIR/scheduler.kubeconfig", qps: $qps, burst: $burst}
queue:
  reservationDepth: 10
  resolutionSeconds: 60
server: {grpcAddress: "127.0.0.1:0", metricsAddress: "127.0.0.1:0"}
leaderElection: {enabled: false}
EOF
pki=$DIR/pki
# A copy, so that a rebuild of the tree during the run does not change what is measured.
cp "$oq_bin" "$out/onequeue-scheduler"
oq_bin=$out/onequeue-scheduler

# start_scheduler WHO: starts it as a component of DIR (down.sh stops it too) and waits until it
# has synced its informers.
start_scheduler() {
  local who=$1 port
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
    onequeue)
      oq_write_args "$DIR" bench-onequeue "$oq_bin" --config "$out/onequeue.yaml"
      oq_start "$DIR" bench-onequeue
      synced() { grep -q "informers synced" "$DIR/logs/bench-onequeue.log"; }
      oq_wait_for "$DIR" bench-onequeue 120 synced ||
        { oq_tail_log "$DIR" bench-onequeue; oq_die "onequeue-scheduler not ready"; }
      ;;
  esac
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

clk=$(getconf CLK_TCK)
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then order="kube-scheduler onequeue"; else order="onequeue kube-scheduler"; fi
  for who in $order; do
    [ "$who" = kube-scheduler ] && name=default-scheduler || name=onequeue
    : > "$DIR/logs/bench-$who.log"
    if $backlog; then
      # The pods wait before the scheduler starts; the clock starts when it has synced.
      driver create bench "$name" "$pods"
      start_scheduler "$who"
      since=$(date +%s.%N)
      pid=$(oq_pid "$DIR" "bench-$who")
      c0=$(cpu_ticks "$pid")
      rc=0
      driver round bench "$name" "$pods" "$out/$who-$r.json" "$since" || rc=$?
    else
      start_scheduler "$who"
      pid=$(oq_pid "$DIR" "bench-$who")
      sleep 1
      c0=$(cpu_ticks "$pid")
      rc=0
      driver round bench "$name" "$pods" "$out/$who-$r.json" || rc=$?
    fi
    c1=$(cpu_ticks "$pid")
    hwm=$(awk '/VmHWM/{print $2}' "/proc/$pid/status")
    oq_stop "$DIR" "bench-$who" 20
    python3 - "$out/$who-$r.json" "$(( c1 - c0 ))" "$clk" "$hwm" "$(uptime | sed 's/.*load average: //')" <<'EOF'
import json, sys
p, ticks, clk, hwm, load = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
d = json.load(open(p))
d["cpu_seconds"] = ticks / clk
d["cpu_seconds_per_1000_pods"] = round(ticks / clk / max(d["bound"], 1) * 1000, 3)
d["peak_rss_mib"] = round(hwm / 1024, 1)
d["load_average"] = load
json.dump(d, open(p, "w"))
EOF
    echo "round $r $who: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d.pop('bound_over_time'); print(d)" "$out/$who-$r.json")" >&2
    driver cleanup bench
    [ $rc -eq 0 ] || oq_log "round $r $who: not every pod was bound (see $DIR/logs/bench-$who.log)"
  done
done

python3 - "$out" "$rounds" "$nodes" "$pods" "$qps" "$burst" <<'EOF'
import json, statistics, sys
out, rounds, nodes, pods, qps, burst = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
rows = {w: [json.load(open(f"{out}/{w}-{r}.json")) for r in range(1, rounds + 1)] for w in ("kube-scheduler", "onequeue")}
keys = [("pods_per_second_api", "pods/s (API timestamps)"), ("pods_per_second_watch", "pods/s (watch)"),
        ("latency_p50_api", "p50 latency s (API, 1 s resolution)"), ("latency_p99_api", "p99 latency s (API)"),
        ("latency_p50_watch", "p50 latency s (watch)"), ("latency_p99_watch", "p99 latency s (watch)"),
        ("cpu_seconds_per_1000_pods", "scheduler CPU-s per 1,000 pods"), ("peak_rss_mib", "scheduler peak RSS MiB")]
mode = rows["onequeue"][0].get("mode", "stream")
print(f"\nSchedulingBasic ({mode}): {nodes} nodes, {pods} pods, {rounds} rounds alternating, client qps {qps} burst {burst}")
print("| figure (median of rounds) | kube-scheduler | onequeue | onequeue/kube-scheduler |")
print("|---|---|---|---|")
for k, label in keys:
    a = statistics.median(r[k] for r in rows["kube-scheduler"])
    b = statistics.median(r[k] for r in rows["onequeue"])
    print(f"| {label} | {a:g} | {b:g} | {b / a if a else float('nan'):.2f} |")
print("per round (pods/s api / watch, cpu-s per 1,000, load):")
for w, rs in rows.items():
    for i, r in enumerate(rs, 1):
        print(f"  {w} round {i}: {r['pods_per_second_api']} / {r['pods_per_second_watch']}, "
              f"{r['cpu_seconds_per_1000_pods']}, bound {r['bound']}/{r['pods']}, load {r['load_average']}")
# Bound pods over time, one column per scheduler and round, for plotting.
cols = [(w, i, r["bound_over_time"]) for w, rs in rows.items() for i, r in enumerate(rs, 1)]
n = max(len(c[2]) for c in cols)
with open(f"{out}/bound_over_time.csv", "w") as f:
    f.write("seconds," + ",".join(f"{w}-{i}" for w, i, _ in cols) + "\n")
    for j in range(n):
        f.write(f"{j * 0.5:.1f}," + ",".join(str(c[2][j][1] if j < len(c[2]) else c[2][-1][1]) for c in cols) + "\n")
print(f"series: {out}/bound_over_time.csv")
EOF
