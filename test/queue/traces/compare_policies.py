#!/usr/bin/env python3
"""fcfs, EASY, conservative and the daemon's default policy side by side on the workload shapes
(docs/simulate.md "The default policy").

Usage: compare_policies.py OQ_BINARY [CONFIG.yaml ...] [--shapes a,b] [--markdown]
  OQ_BINARY   the built `oq` (build/src/scheduler/oq)
  CONFIG      extra columns: `oq simulate TRACE --config CONFIG` (default: none; the default
              policy is the `default` column, `--config` with an empty configuration)
Per shape and policy: average bounded slowdown (tau 10 s), its change against EASY, average,
99th-percentile and maximum wait, and the largest ratio of a job's wait to its EASY wait at the
99th percentile (p99 of wait / EASY wait over the jobs that waited under EASY at least 60 s).
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = ["bursty", "many_small", "few_huge", "overestimated"]


def run(oq, trace, args):
    out = subprocess.run([oq, "simulate", trace, "--json", "--per-job"] + args,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def percentile(values, q):
    values = sorted(values)
    if not values:
        return 0
    k = min(len(values) - 1, max(0, int(round(q * (len(values) - 1)))))
    return values[k]


def main():
    argv = sys.argv[1:]
    markdown = "--markdown" in argv
    argv = [a for a in argv if a != "--markdown"]
    shapes = SHAPES
    if "--shapes" in argv:
        i = argv.index("--shapes")
        shapes = argv[i + 1].split(",")
        del argv[i:i + 2]
    oq = argv[0]
    configs = argv[1:]
    empty = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    empty.write("apiVersion: onequeue.io/v1alpha1\nkind: SchedulerConfiguration\n")
    empty.close()
    columns = [("fcfs", ["--policy", "fcfs"]), ("easy", ["--policy", "easy"]),
               ("conservative", ["--policy", "conservative"]), ("default", ["--config", empty.name])]
    columns += [(os.path.basename(c), ["--config", c]) for c in configs]
    if markdown:
        print("| shape | policy | avg bounded slowdown | vs EASY | avg wait (s) | p99 wait (s) | max wait (s) | p99 of wait / EASY wait |")
        print("|---|---|---|---|---|---|---|---|")
    for shape in shapes:
        trace = os.path.join(HERE, "shape_%s.swf" % shape)
        results = {name: run(oq, trace, args) for name, args in columns}
        easy_wait = {j["job"]: j["wait"] for j in results["easy"]["jobs"]}
        easy_bsld = results["easy"]["summary"]["average_bounded_slowdown"]
        for name, _ in columns:
            r = results[name]
            s = r["summary"]
            waits = [j["wait"] for j in r["jobs"]]
            ratios = [j["wait"] / easy_wait[j["job"]] for j in r["jobs"] if easy_wait[j["job"]] >= 60]
            row = (shape, name, s["average_bounded_slowdown"],
                   100.0 * (s["average_bounded_slowdown"] - easy_bsld) / easy_bsld,
                   s["average_wait"], percentile(waits, 0.99), s["max_wait"], percentile(ratios, 0.99))
            if markdown:
                print("| %s | %s | %.2f | %+.1f %% | %.0f | %.0f | %.0f | %.2f |" % row)
            else:
                print("%-14s %-22s bsld %8.2f (%+6.1f%%)  wait avg %8.0f p99 %8.0f max %8.0f  p99 ratio %.2f" % row)
    os.unlink(empty.name)


if __name__ == "__main__":
    main()
