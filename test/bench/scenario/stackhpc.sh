#!/usr/bin/env bash
# The StackHPC scenario, every way, longer than CI's run, with the table and the plot of
# docs/stackhpc-scenario.md. Run by hand on a quiet machine (nothing else compiling or testing):
#   test/bench/scenario/stackhpc.sh [OUT_DIR]
# Environment (defaults in brackets): NODES [6] GPU nodes, INTERACTIVE [4] pods one every
# INTERVAL [10] s, BOUND [120] s measured window, SETTLE [300] s for requeued jobs, JOB_SECONDS [30],
# BUILD_DIR [build], SKIP_BUILD [0]. Runs the four ways with StatefulSet workers, then two-schedulers again with
# Deployment workers. Writes OUT_DIR/<way>.timeline.csv, <way>.summary.json, table.md, stackhpc.png.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
out="${1:-$root/build/stackhpc-scenario}"
build="${BUILD_DIR:-$root/build}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

if ! command -v gnuplot >/dev/null; then
  echo "stackhpc.sh: installing gnuplot-nox for the plot" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q gnuplot-nox >/dev/null
fi
# SKIP_BUILD=1: use the binaries as they are (e.g. while others edit the tree).
[ "${SKIP_BUILD:-0}" = 1 ] || make -C "$root" upstream build >/dev/null

export ONEQUEUE_SCENARIO_NODES="${NODES:-6}"
export ONEQUEUE_SCENARIO_INTERACTIVE="${INTERACTIVE:-4}"
export ONEQUEUE_SCENARIO_INTERVAL_SECONDS="${INTERVAL:-10}"
export ONEQUEUE_SCENARIO_BOUND_SECONDS="${BOUND:-120}"
export ONEQUEUE_SCENARIO_SETTLE_SECONDS="${SETTLE:-300}"
export ONEQUEUE_SCENARIO_JOB_SECONDS="${JOB_SECONDS:-30}"
# Slurm's own delay of a requeued job (the e2e test shortens it to 50 s for its 45 s window).
export ONEQUEUE_SCENARIO_REQUEUE_DELAY_SECONDS="${REQUEUE_DELAY:-120}"
export ONEQUEUE_SCENARIO_WAYS=kube-scheduler,two-schedulers,onequeue-workers,onequeue-lending
export ONEQUEUE_SCENARIO_OUT="$out"
echo "stackhpc.sh: $ONEQUEUE_SCENARIO_NODES nodes, $ONEQUEUE_SCENARIO_INTERACTIVE interactive pods every" \
  "${ONEQUEUE_SCENARIO_INTERVAL_SECONDS} s, window ${ONEQUEUE_SCENARIO_BOUND_SECONDS} s; output in $out" >&2
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee "$out/load.txt" >&2
"$build/test/e2e/stackhpc_e2e_test" --gtest_color=no 2>&1 | tee "$out/run.log" | grep -E "SCENARIO |OK|FAILED" || true
ONEQUEUE_SCENARIO_WAYS=two-schedulers ONEQUEUE_SCENARIO_WORKER_CONTROLLER=deployment \
  "$build/test/e2e/stackhpc_e2e_test" --gtest_color=no 2>&1 | tee "$out/run-deployment.log" | grep -E "SCENARIO |OK|FAILED" || true
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/load.txt" >&2

python3 - "$out" <<'PY'
import json, sys, os
out = sys.argv[1]
ways = ["kube-scheduler", "two-schedulers", "two-schedulers-deployment", "onequeue-workers", "onequeue-lending"]
rows = [json.load(open(f"{out}/{w}.summary.json")) for w in ways if os.path.exists(f"{out}/{w}.summary.json")]
cols = [("way", "way"), ("interactive bound / created", None), ("never bound", "interactive_never_bound"),
        ("bind p50 s", "bind_p50_seconds"), ("bind p99 s", "bind_p99_seconds"),
        ("evictions per interactive pod", "evictions_per_interactive_pod"),
        ("worker evicted most", "max_evictions_of_one_worker"),
        ("replacements on needed nodes", "replacements_on_needed_nodes"),
        ("bindings to a node still held", "overbooked_bindings"),
        ("Slurm jobs requeued", "slurm_jobs_requeued"), ("requeued jobs COMPLETED", "slurm_requeued_jobs_completed"),
        ("Slurm GPU-hours done in the window", "slurm_gpu_hours_in_window")]
def cell(r, key, title):
    if key is None: return f"{r['interactive_bound']} / {r['interactive_created']}"
    v = r[key]
    if isinstance(v, float): return "-" if v < 0 else f"{v:.2f}"
    return str(v)
with open(f"{out}/table.md", "w") as f:
    f.write("| " + " | ".join(t for t, _ in cols) + " |\n|" + "---|" * len(cols) + "\n")
    for r in rows: f.write("| " + " | ".join(cell(r, k, t) for t, k in cols) + " |\n")
print(open(f"{out}/table.md").read())
PY

plot_lines() {  # column of the timeline CSVs
  local col=$1 sep="" w
  for w in kube-scheduler two-schedulers two-schedulers-deployment onequeue-workers onequeue-lending; do
    [ -f "$out/$w.timeline.csv" ] || continue
    printf '%s"%s" using 1:%s with steps lw 2 title "%s"' "$sep" "$out/$w.timeline.csv" "$col" "$w"
    sep=", "
  done
}
gnuplot <<GP
set terminal png size 1000,700 noenhanced
set output "$out/stackhpc.png"
set datafile separator ","
set key autotitle columnhead left top
set multiplot layout 2,1 title "StackHPC scenario: $ONEQUEUE_SCENARIO_NODES GPU nodes, $ONEQUEUE_SCENARIO_INTERACTIVE interactive pods every $ONEQUEUE_SCENARIO_INTERVAL_SECONDS s"
set ylabel "evictions (cumulative)"
set grid
plot $(plot_lines 2)
set xlabel "seconds since the first interactive pod"
set ylabel "interactive pods waiting"
plot $(plot_lines 3)
unset multiplot
GP
echo "stackhpc.sh: plot $out/stackhpc.png, table $out/table.md" >&2
