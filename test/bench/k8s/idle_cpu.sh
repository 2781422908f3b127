#!/usr/bin/env bash
# The idle daemon's CPU: test/bench/k8s/idle_cpu.sh DIR SECONDS NODES BINARY[@CLIENT]...
# (CLIENT: the daemon's kubernetes.httpClient, curl by default or nghttp2)
# Starts a local control plane in DIR (test/cluster/up.sh --kwok), makes NODES kwok nodes in the
# daemon's pool and no pods, then for each BINARY (an onequeue-scheduler) in turn: starts it, waits
# until its informers have synced plus 5 s, and prints the utime+stime it used over SECONDS
# (/proc/PID/stat) as a share of one core, and how often its threads woke up (voluntary context
# switches, /proc/PID/task/*/status; the HTTP loop thread apart when it is named: oq-http for
# libcurl, oq-h2 for nghttp2), then the wake-ups by thread name (name, threads, wake-ups). Stops
# everything at the end. Run by hand, one at a time
# (flock /tmp/oq-e2e.lock).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/../../cluster
# shellcheck source=../../cluster/lib.sh
source "$cluster/lib.sh"
[ $# -ge 4 ] || { echo "usage: $0 DIR SECONDS NODES BINARY[@curl|@nghttp2]..." >&2; exit 2; }
DIR=$1 seconds=$2 nodes=$3
shift 3
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
trap 'bash "$cluster/down.sh" "$DIR" >/dev/null 2>&1 || true' EXIT
bash "$cluster/up.sh" "$DIR" --kwok >/dev/null
python3 "$here/../cluster/bench_driver.py" "$DIR" nodes "$nodes" bench >/dev/null
# The daemon's configuration on CLIENT, always named (the daemon's default, auto, is nghttp2 where
# no proxy variable is set).
write_config() {
  local client_key=", httpClient: $1"
  cat > "$DIR/idle-onequeue-$1.yaml" <<YAML
apiVersion: onequeue.io/v1alpha1
kind: SchedulerConfiguration
schedulerName: onequeue
poolLabel: "onequeue.io/pool=bench"
kubernetes: {kubeconfig: "$DIR/scheduler.kubeconfig"$client_key}
server: {grpcAddress: "127.0.0.1:0", metricsAddress: "127.0.0.1:0"}
leaderElection: {enabled: false}
YAML
}
clk=$(getconf CLK_TCK)
# switches PID [COMM]: voluntary context switches of PID's threads (those named COMM only).
switches() {
  local sum=0 t c
  for t in /proc/"$1"/task/*; do
    [ -n "${2:-}" ] && { read -r c <"$t/comm" || true; [ "$c" = "$2" ] || continue; }
    c=$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status" 2>/dev/null || echo 0)
    sum=$((sum + ${c:-0}))
  done
  echo "$sum"
}
# per_thread PID: "TID COMM VOLUNTARY" for each of PID's threads (COMM without spaces).
per_thread() {
  local t c v
  for t in /proc/"$1"/task/*; do
    read -r c <"$t/comm" 2>/dev/null || continue
    v=$(awk '/^voluntary_ctxt_switches/ {print $2}' "$t/status" 2>/dev/null || echo 0)
    echo "${t##*/} ${c// /_} ${v:-0}"
  done
}
n=0
for arg in "$@"; do
  n=$((n + 1))
  bin=${arg%@*} client=curl http_thread=oq-http
  [[ $arg == *@* ]] && client=${arg##*@}
  case $client in curl) ;; nghttp2) http_thread=oq-h2 ;; *) echo "unknown client $client" >&2; exit 2 ;; esac
  write_config "$client"
  log=$DIR/idle-$n.log
  "$bin" --config "$DIR/idle-onequeue-$client.yaml" >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 120); do grep -q "informers synced" "$log" && break; sleep 1; done
  grep -q "informers synced" "$log" || { tail -20 "$log"; kill "$pid"; exit 1; }
  sleep 5
  t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  w0=$(switches "$pid") h0=$(switches "$pid" "$http_thread")
  per_thread "$pid" >"$DIR/idle-$n.threads0"
  sleep "$seconds"
  t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
  w1=$(switches "$pid") h1=$(switches "$pid" "$http_thread")
  per_thread "$pid" >"$DIR/idle-$n.threads1"
  kill "$pid"
  wait "$pid" || true
  awk -v b="$arg" -v t="$http_thread" -v d=$((t1 - t0)) -v c="$clk" -v s="$seconds" -v w=$((w1 - w0)) -v h=$((h1 - h0)) \
    'BEGIN { printf "%s: %.2f CPU-s in %d s = %.2f%% of a core; %d wake-ups (%d in %s threads)\n", b, d / c, s, 100 * d / c / s, w, h, t }'
  # Wake-ups by thread name over the same SECONDS (threads of one name summed; a thread that
  # started or ended in between counts what it did while both snapshots saw it).
  awk 'NR == FNR { before[$1] = $3; next } ($1 in before) { by[$2] += $3 - before[$1]; n[$2]++ }
       END { for (c in by) printf "  %-16s x%-3d %6d\n", c, n[c], by[c] }' \
    "$DIR/idle-$n.threads0" "$DIR/idle-$n.threads1" | sort -k3 -n -r
done
