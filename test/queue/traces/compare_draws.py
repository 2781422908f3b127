#!/usr/bin/env python3
"""A policy against EASY over several draws of the workload shapes (docs/queue.md "How much six
traces say"): one draw of 3,000 jobs says little about a p99 (its 30th-longest wait), so a
configuration is judged by its worst and median ratios over draws, not by one trace.

Usage: compare_draws.py OQ_BINARY [--seeds 1500,2500,3500] [--jobs N] [--shapes a,b]
                        [--column NAME=ARGS ...]
  OQ_BINARY   the built `oq` (build/src/scheduler/oq)
  --seeds     seed bases of generate_shapes.py (1500 = the committed traces)
  --jobs      jobs per trace (default 3000)
  --shapes    default: all six
  --column    a configuration NAME: `oq simulate TRACE ARGS` (split on spaces); default: one
              column `default` (the daemon's defaults)
Per column: for every draw and shape, the average bounded slowdown's change against EASY on the
same trace, the p99 wait (nearest rank) and max wait as ratios to EASY's; then the worst and the
median of each over all traces, and how many traces meet issue 27's targets (slowdown at least
25 % below EASY's, p99 <= 1.2x, max <= 1.5x).
"""
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare_policies import SHAPES, percentile, run  # noqa: E402


def take(argv, flag, default):
    if flag not in argv:
        return default
    i = argv.index(flag)
    value = argv[i + 1]
    del argv[i:i + 2]
    return value


def ratios(oq, trace, args, easy):
    r = run(oq, trace, args)
    s = r["summary"]
    p99 = percentile([j["wait"] for j in r["jobs"]], 0.99)
    lead = 100.0 * (s["average_bounded_slowdown"] - easy[0]) / easy[0]
    return lead, p99 / easy[1] if easy[1] else 0, s["max_wait"] / easy[2] if easy[2] else 0


def main():
    argv = sys.argv[1:]
    seeds = [int(s) for s in take(argv, "--seeds", "1500,2500,3500").split(",")]
    jobs = int(take(argv, "--jobs", "3000"))
    shapes = take(argv, "--shapes", ",".join(SHAPES)).split(",")
    columns = []
    while "--column" in argv:
        name, _, args = take(argv, "--column", "").partition("=")
        columns.append((name, args.split()))
    if len(argv) != 1:
        sys.exit(__doc__)
    oq = argv[0]
    empty = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    empty.write("apiVersion: onequeue.io/v1alpha1\nkind: SchedulerConfiguration\n")
    empty.close()
    if not columns:
        columns = [("default", ["--config", empty.name])]
    results = {name: [] for name, _ in columns}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            out = os.path.join(tmp, str(seed))
            os.makedirs(out)
            subprocess.run([sys.executable, os.path.join(HERE, "generate_shapes.py"), "--jobs", str(jobs),
                            "--seed-base", str(seed), out, ",".join(shapes)], check=True)
            for shape in shapes:
                trace = os.path.join(out, "shape_%s.swf" % shape)
                e = run(oq, trace, ["--policy", "easy"])
                easy = (e["summary"]["average_bounded_slowdown"],
                        percentile([j["wait"] for j in e["jobs"]], 0.99), e["summary"]["max_wait"])
                for name, args in columns:
                    r = ratios(oq, trace, args, easy)
                    results[name].append(r)
                    print("%-12s seed %5d %-14s slowdown %+6.1f %%  p99 %.2fx  max %.2fx" % ((name, seed, shape) + r))
                    sys.stdout.flush()
    os.unlink(empty.name)
    print("| configuration | traces | slowdown vs EASY: worst / median | p99 / EASY: worst / median | max / EASY: worst / median | traces meeting all three |")
    print("|---|---|---|---|---|---|")
    for name, _ in columns:
        rs = results[name]
        meets = sum(1 for lead, p99, mx in rs if lead <= -25 and p99 <= 1.2 and mx <= 1.5)
        print("| %s | %d | %+.1f %% / %+.1f %% | %.2f / %.2f | %.2f / %.2f | %d |" % (
            name, len(rs), max(r[0] for r in rs), statistics.median(r[0] for r in rs),
            max(r[1] for r in rs), statistics.median(r[1] for r in rs),
            max(r[2] for r in rs), statistics.median(r[2] for r in rs), meets))


if __name__ == "__main__":
    main()
