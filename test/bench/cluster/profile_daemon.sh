#!/usr/bin/env bash
# profile_daemon.sh OUT CLIENT BIN [PERF_ARGS...]: one SchedulingBasic backlog round (1,000 kwok
# nodes, 5,000 pods; kube-scheduler's round first) with the daemon BIN on HTTP client CLIENT
# (curl | nghttp2), and `perf record -F 499 PERF_ARGS -p PID` of the daemon for 15 s from its start
# (issue 26: where the busy daemon's CPU goes; docs/benchmarks.md "The busy daemon on each HTTP
# client"). Run by hand under both locks, never by make test:
#   flock /tmp/oq-build.lock flock /tmp/oq-e2e.lock test/bench/cluster/profile_daemon.sh OUT nghttp2 build/src/scheduler/onequeue-scheduler -m 4096 --call-graph dwarf,8192
# Writes OUT/bench.log (the round), OUT/perf.data and OUT/report.txt (shares by thread and DSO).
set -u
out=$1 client=$2 bin=$3
shift 3
repo=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$out"
"$repo/test/bench/cluster/side_by_side.sh" "$out/cluster" --nodes 1000 --pods 5000 --rounds 1 \
  --workloads basic --backlog --no-ceiling --onequeue "$bin" --http-client "$client" > "$out/bench.log" 2>&1 &
bench=$!
# side_by_side.sh runs a copy of BIN from OUT/cluster/bench; wait for it to start.
pid=''
for _ in $(seq 3000); do
  pid=$(pgrep -f "onequeue-scheduler --config $out/cluster" | head -1)
  [ -n "$pid" ] && break
  kill -0 $bench 2>/dev/null || break
  sleep 0.1
done
echo "daemon pid ${pid:-none}" >> "$out/bench.log"
[ -n "$pid" ] && perf record -F 499 "$@" -o "$out/perf.data" -p "$pid" -- sleep 15 > "$out/perf.log" 2>&1
wait $bench
perf report -i "$out/perf.data" --no-children --sort comm,dso -g none --stdio 2>/dev/null |
  grep -v '^#' | grep -v '^$' | head -25 > "$out/report.txt"
