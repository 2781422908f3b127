#!/usr/bin/env python3
"""fcfs, EASY, conservative and the daemon's default policy side by side on the workload shapes
(docs/simulate.md "The default policy").

Usage: compare_policies.py OQ_BINARY [CONFIG.yaml ...] [--shapes a,b] [--markdown]
                           [--policies fcfs,easy,conservative,default] [--column NAME=ARGS ...]
                           [--traces DIR]
  OQ_BINARY   the built `oq` (build/src/scheduler/oq)
  CONFIG      extra columns: `oq simulate TRACE --config CONFIG` (default: none; the default
              policy is the `default` column, `--config` with an empty configuration)
  --column    an extra column NAME: `oq simulate TRACE ARGS` (split on spaces), e.g.
              'bound12h=--starvation-bound 43200' (the daemon's defaults with a what-if)
  --traces    read shape_<name>.swf from DIR (default: the committed ones beside this script),
              e.g. other draws made by `generate_shapes.py --seed-base S --jobs N DIR`
Per shape and policy: average bounded slowdown (tau 10 s), its change against EASY, average,
99th-percentile (nearest rank) and maximum wait, each of the last two also as a ratio to EASY's.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SHAPES = ["bursty", "many_small", "few_huge", "overestimated", "heavy_steady", "heavy_bursts"]


def run(oq, trace, args):
    out = subprocess.run([oq, "simulate", trace, "--json", "--per-job"] + args,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def percentile(values, q):
    """Nearest rank, as `oq simulate` reports it: the ceil(q * n)-th smallest."""
    values = sorted(values)
    if not values:
        return 0
    k = min(len(values), max(1, int(math.ceil(q * len(values) - 1e-9))))
    return values[k - 1]


def main():
    argv = sys.argv[1:]
    markdown = "--markdown" in argv
    argv = [a for a in argv if a != "--markdown"]
    shapes = SHAPES
    if "--shapes" in argv:
        i = argv.index("--shapes")
        shapes = argv[i + 1].split(",")
        del argv[i:i + 2]
    policies = ["fcfs", "easy", "conservative", "default"]
    if "--policies" in argv:
        i = argv.index("--policies")
        policies = argv[i + 1].split(",")
        del argv[i:i + 2]
    traces = HERE
    if "--traces" in argv:
        i = argv.index("--traces")
        traces = argv[i + 1]
        del argv[i:i + 2]
    extra = []
    while "--column" in argv:
        i = argv.index("--column")
        name, _, args = argv[i + 1].partition("=")
        extra.append((name, args.split()))
        del argv[i:i + 2]
    if "easy" not in policies:
        policies.insert(0, "easy")  # the reference of every ratio
    oq = argv[0]
    configs = argv[1:]
    empty = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    empty.write("apiVersion: onequeue.io/v1alpha1\nkind: SchedulerConfiguration\n")
    empty.close()
    builtin = {"fcfs": ["--policy", "fcfs"], "easy": ["--policy", "easy"],
               "conservative": ["--policy", "conservative"], "default": ["--config", empty.name]}
    columns = [(p, builtin[p]) for p in policies]
    columns += [(os.path.basename(c), ["--config", c]) for c in configs]
    columns += extra
    if markdown:
        print("| shape | policy | avg bounded slowdown | vs EASY | avg wait (s) | p99 wait (s) | p99 / EASY's | max wait (s) | max / EASY's |")
        print("|---|---|---|---|---|---|---|---|---|")
    for shape in shapes:
        trace = os.path.join(traces, "shape_%s.swf" % shape)
        results = {name: run(oq, trace, args) for name, args in columns}
        easy_bsld = results["easy"]["summary"]["average_bounded_slowdown"]
        easy_p99 = percentile([j["wait"] for j in results["easy"]["jobs"]], 0.99)
        easy_max = results["easy"]["summary"]["max_wait"]
        for name, _ in columns:
            r = results[name]
            s = r["summary"]
            waits = [j["wait"] for j in r["jobs"]]
            p99 = percentile(waits, 0.99)
            row = (shape, name, s["average_bounded_slowdown"],
                   100.0 * (s["average_bounded_slowdown"] - easy_bsld) / easy_bsld,
                   s["average_wait"], p99, p99 / easy_p99 if easy_p99 else 0, s["max_wait"],
                   s["max_wait"] / easy_max if easy_max else 0)
            if markdown:
                print("| %s | %s | %.2f | %+.1f %% | %.0f | %.0f | %.2f | %.0f | %.2f |" % row)
            else:
                print("%-14s %-22s bsld %8.2f (%+6.1f%%)  wait avg %8.0f p99 %8.0f (%.2fx) max %8.0f (%.2fx)" % row)
            sys.stdout.flush()
    os.unlink(empty.name)


if __name__ == "__main__":
    main()
