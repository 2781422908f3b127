#!/bin/bash
# Compares two queue_bench binaries on the same machine in one run: alternates them ROUNDS times
# over the rows matching FILTER and prints, per row, each binary's best CPU time and decision
# fingerprint. On a shared VM whose speed drifts by 1.5x within an hour, only such alternated
# runs compare; absolute figures do not (docs/queue.md "Benchmarks").
#
#   test/bench/queue/side_by_side.sh OLD_BINARY NEW_BINARY [ROUNDS] [FILTER]
#
# JSON output: the CSV reporter of Debian's Google Benchmark aborts when rows have different
# counters.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  sed -n '2,9p' "$0" >&2
  exit 2
fi
old=$1 new=$2 rounds=${3:-3}
filter=${4:-'BM_FullCycle/depth:(100|1)/max_estimates:(1|1000|0)/|BM_SteadyCycle|BM_Arrival|BM_QueueOrder|BM_Memory'}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((r = 0; r < rounds; ++r)); do
  for b in "$old" "$new"; do
    "$b" --benchmark_filter="$filter" --benchmark_format=json 2>/dev/null |
      python3 -c '
import json, sys
for x in json.load(sys.stdin)["benchmarks"]:
    print(json.dumps({"bin": sys.argv[1], "name": x["name"], "cpu": x["cpu_time"],
                      "unit": x["time_unit"], "fp": x.get("fingerprint")}))' "$b" >>"$out"
  done
done
python3 - "$out" "$old" "$new" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
old, new = sys.argv[2], sys.argv[3]
best = {}
for r in rows:
    k = (r["name"], r["bin"])
    if k not in best or r["cpu"] < best[k]["cpu"]:
        best[k] = r
names = list(dict.fromkeys(r["name"] for r in rows))
print("%-60s %14s %14s %8s  %s" % ("row (best of each)", "old", "new", "new/old", "fingerprints"))
for n in names:
    o, w = best.get((n, old)), best.get((n, new))
    if not o or not w:
        continue
    same = "same" if o["fp"] == w["fp"] else "DIFFER %s %s" % (o["fp"], w["fp"])
    if o["fp"] is None:
        same = ""
    print("%-60s %11.3f %s %11.3f %s %8.2f  %s" % (n, o["cpu"], o["unit"], w["cpu"], w["unit"],
                                                   w["cpu"] / o["cpu"], same))
PY
