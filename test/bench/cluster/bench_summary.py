#!/usr/bin/env python3
"""The table, the bound-over-time series and its plot for one workload of side_by_side.sh.

  bench_summary.py OUT WORKLOAD ROUNDS SCHEDULERS TITLE
reads OUT/WORKLOAD-<scheduler>-<round>.json (bench_driver.py round, plus the CPU and RSS figures
side_by_side.sh adds), prints a Markdown table (median of the rounds, ratio onequeue/kube-scheduler
when both ran), the per-round figures and, for a round that did not bind everything, why the pods
still waited; writes OUT/WORKLOAD-bound_over_time.csv (bound pods every 0.5 s, per scheduler and
round, from the watch) and OUT/WORKLOAD-bound_over_time.png (gnuplot if it is installed, else
plot_png.py, pure Python). Python standard library only.
"""
import json
import math
import os
import shutil
import statistics
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))

KEYS = [("pods_per_second_api", "pods/s (API timestamps)"),
        ("pods_per_second_watch", "pods/s (watch)"),
        ("latency_p50_api", "p50 latency s (API, 1 s resolution)"),
        ("latency_p99_api", "p99 latency s (API)"),
        ("latency_p50_watch", "p50 latency s (watch)"),
        ("latency_p99_watch", "p99 latency s (watch)"),
        ("gang_latency_p50_watch", "p50 gang latency s (last member created -> last bound, watch)"),
        ("gang_latency_p99_watch", "p99 gang latency s (watch)"),
        ("victims_per_preemptor", "victims per preemptor bound"),
        ("events_drained_seconds", "Scheduled events all written, s after the last binding"),
        ("cpu_seconds_per_1000_pods_to_last_binding", "scheduler CPU-s per 1,000 pods bound, to the last binding"),
        ("cpu_seconds_per_1000_pods", "scheduler CPU-s per 1,000 pods bound, until its Scheduled events are written"),
        ("peak_rss_mib", "scheduler peak RSS MiB (VmHWM)"),
        ("api_requests_total", "apiserver requests during the round (all clients)"),
        ("api_requests_per_second", "apiserver requests/s over the round (all clients)"),
        ("api_requests_in_flight", "apiserver requests in flight, mean (count x mean latency / round)"),
        # side_by_side.sh --slurm (slurm_stats.py): the daemon's cycles since it started, and Slurm.
        ("cycles_total", "onequeue cycles (from its start to the round's end)"),
        ("full_cycles_total", "of them full cycles"),
        ("arrival_cycles_total", "of them arrival cycles"),
        ("slurm_polls_per_minute", "onequeue's Slurm polls per minute"),
        ("slurm_rpcs_per_minute", "slurmctld RPCs per minute during the round (sdiag; all clients, the churn's sbatch too)"),
        ("slurm_jobs_submitted", "Slurm jobs submitted during the round (churn)"),
        ("slurm_jobs_started", "of them started before the round ended"),
        ("slurm_jobs_started_by_onequeue", "Slurm jobs onequeue started (held, then released; the others Slurm started between polls)"),
        ("slurm_jobs_waiting_10s", "of them pending > 10 s at the round's end"),
        ("slurm_job_wait_p50", "Slurm job wait p50 s (submit -> start, started ones)"),
        ("slurm_job_wait_max", "Slurm job wait max s"),
        ("first_cycle_after_sync_s", "onequeue's first cycle, s after its informers synced (Slurm on: after its first poll)")]
# side_by_side.sh --slurm-tail: the Slurm-on daemon kept running after its round (pods all bound, churn on).
KEYS += [("tail_" + k, "tail (steady, after the round): " + label) for k, label in KEYS
         if k in ("cycles_total", "full_cycles_total", "arrival_cycles_total", "slurm_polls_per_minute",
                  "slurm_rpcs_per_minute", "slurm_jobs_submitted", "slurm_jobs_started", "slurm_jobs_started_by_onequeue",
                  "slurm_jobs_waiting_10s",
                  "slurm_job_wait_p50", "slurm_job_wait_max")]


def add_apiserver_rates(r):
    """Requests per second and mean requests in flight at the apiserver over a round (all clients).

    In flight is Little's law: the sum of count x mean server-side latency over the round's wall
    time. When more in flight buys few more requests per second, the apiserver (or the machine
    under it) is saturated: the rate it reaches bounds every scheduler's on a write-bound shape.
    """
    reqs, wall = r.get("api_requests"), r.get("wall_seconds")
    if not reqs or not wall:
        return
    total = sum(c for c, _ in reqs.values())
    r["api_requests_total"] = total
    r["api_requests_per_second"] = round(total / wall, 1)
    r["api_requests_in_flight"] = round(sum(c * ms / 1000 for c, ms in reqs.values()) / wall, 1)


def median(values):
    v = [x for x in values if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return statistics.median(v) if v else float("nan")


def fmt(x):
    return "n/a" if isinstance(x, float) and math.isnan(x) else f"{x:g}"


def plot(csv_path, png_path, title, columns):
    if shutil.which("gnuplot"):
        colours = {"kube-scheduler": ["#d62728", "#ff7f0e", "#e377c2"], "onequeue": ["#1f77b4", "#2ca02c", "#17becf"],
                   "onequeue-slurm": ["#9467bd", "#8c564b", "#bcbd22"]}
        used = {}
        lines = []
        for i, col in enumerate(columns, start=2):
            who = col.rsplit("-", 1)[0]
            palette = colours.get(who, ["#7f7f7f"])
            c = palette[used.get(who, 0) % len(palette)]
            used[who] = used.get(who, 0) + 1
            lines.append(f"'{csv_path}' using 1:{i} with lines lw 2 lc rgb '{c}' title '{col}'")
        script = "\n".join([
            "set terminal pngcairo size 960,540 font 'sans,10'",
            f"set output '{png_path}'",
            "set datafile separator ','",
            'set title "{}" noenhanced'.format(title.replace('"', "'").replace("; ", "\\n", 1)),
            "set xlabel 'seconds since the first pod was created (backlog: since the scheduler synced)'",
            "set ylabel 'pods bound'",
            "set key left top noenhanced",
            "set grid",
            "plot " + ", \\\n     ".join(lines), ""])
        r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
        if r.returncode == 0:
            return "gnuplot"
        print(f"gnuplot failed: {r.stderr.strip()[:300]}; falling back to plot_png.py", file=sys.stderr)
    sys.path.insert(0, here)
    import plot_png
    plot_png.plot_csv(csv_path, png_path, title)
    return "plot_png.py"


def print_request_mix(rows, schedulers, both):
    """Requests per round by verb and resource (all clients; median of the rounds), the lines where
    the schedulers differ first: what one writes that the other does not."""
    keys = sorted({k for rs in rows.values() for r in rs for k in r.get("api_requests", {})})
    if not keys:
        return
    med = {w: {k: median(r.get("api_requests", {}).get(k, [0])[0] for r in rows[w]) for k in keys} for w in schedulers}
    if both:
        keys.sort(key=lambda k: (-abs(med["onequeue"][k] - med["kube-scheduler"][k]), k))
    print("\n| requests per round by verb and resource (all clients, median of rounds) | " + " | ".join(schedulers) +
          (" | onequeue - kube-scheduler |" if both else " |"))
    print("|---" * (len(schedulers) + 1 + (1 if both else 0)) + "|")
    for k in keys:
        line = f"| {k} | " + " | ".join(fmt(med[w][k]) for w in schedulers)
        if both:
            line += f" | {med['onequeue'][k] - med['kube-scheduler'][k]:+g}"
        print(line + " |")
    print()


def main(argv):
    out, workload, rounds, schedulers, title = argv[0], argv[1], int(argv[2]), argv[3].split(","), argv[4]
    rows = {}
    for w in schedulers:
        rows[w] = []
        for r in range(1, rounds + 1):
            p = f"{out}/{workload}-{w}-{r}.json"
            if os.path.exists(p):
                rows[w].append(json.load(open(p)))
                add_apiserver_rates(rows[w][-1])
    both = all(rows.get(w) for w in ("kube-scheduler", "onequeue"))
    # The ratio columns: onequeue (and with --slurm onequeue-slurm) over kube-scheduler.
    ratios = [w for w in schedulers if w.startswith("onequeue") and rows.get(w)] if rows.get("kube-scheduler") else []
    print(f"\n{title}")
    header = "| figure (median of rounds) | " + " | ".join(schedulers) + "".join(f" | {w}/kube-scheduler" for w in ratios) + " |"
    print(header)
    print("|---" * (len(schedulers) + 1 + len(ratios)) + "|")
    for k, label in KEYS:
        if not any(k in r for rs in rows.values() for r in rs):
            continue
        vals = {w: median(r.get(k) for r in rows[w]) for w in schedulers}
        line = f"| {label} | " + " | ".join(fmt(vals[w]) for w in schedulers)
        for w in ratios:
            a, b = vals["kube-scheduler"], vals[w]
            line += f" | {b / a:.2f}" if a and not math.isnan(a) and not math.isnan(b) else " | n/a"
        print(line + " |")
    print_request_mix(rows, schedulers, both)
    incomplete = [f"{w} round {i} ({r['bound']} of {r['pods']} bound)" for w, rs in rows.items()
                  for i, r in enumerate(rs, 1) if r["bound"] < r["pods"]]
    if incomplete:
        print("**Not every pod was bound** in: " + ", ".join(incomplete) +
              " (the medians include these rounds' figures over the pods that were bound; see below)")
    print("per round (pods/s api / watch, CPU-s per 1,000 pods, peak RSS MiB, bound/pods, load average):")
    for w, rs in rows.items():
        for i, r in enumerate(rs, 1):
            extra = f", victims {r['victims']}" if "victims" in r else ""
            print(f"  {w} round {i}: {r['pods_per_second_api']} / {r['pods_per_second_watch']}, "
                  f"{r.get('cpu_seconds_per_1000_pods')}, {r.get('peak_rss_mib')}, "
                  f"bound {r['bound']}/{r['pods']}{extra}, load {r.get('load_average')}")
            if "slurm_jobs_submitted" in r:
                cyc = (f"cycles {r['cycles_total']:g} ({r['full_cycles_total']:g} full, {r['arrival_cycles_total']:g} arrival), "
                       f"Slurm polls {r.get('slurm_polls_total', 0):g}, " if "cycles_total" in r else "")
                print(f"    Slurm: {cyc}slurmctld RPCs {r['slurm_rpcs_per_minute']:g}/min over "
                      f"{r['slurm_window_seconds']:g} s; jobs submitted {r['slurm_jobs_submitted']}, started "
                      f"{r['slurm_jobs_started']}, pending > 10 s {r['slurm_jobs_waiting_10s']}, wait p50/max "
                      f"{fmt(r['slurm_job_wait_p50'])}/{fmt(r['slurm_job_wait_max'])} s; RPCs by type: " +
                      ", ".join(f"{k} {v}" for k, v in list(r["slurm_rpcs"].items())[:8]))
            if "tail_slurm_jobs_submitted" in r:
                print(f"    tail ({r['tail_slurm_window_seconds']:g} s after the round): cycles {r.get('tail_cycles_total', 0):g} "
                      f"({r.get('tail_full_cycles_total', 0):g} full), Slurm polls {r.get('tail_slurm_polls_total', 0):g}, "
                      f"slurmctld RPCs {r['tail_slurm_rpcs_per_minute']:g}/min; jobs submitted {r['tail_slurm_jobs_submitted']}, "
                      f"started {r['tail_slurm_jobs_started']}, pending > 10 s {r['tail_slurm_jobs_waiting_10s']}; RPCs by type: " +
                      ", ".join(f"{k} {v}" for k, v in list(r["tail_slurm_rpcs"].items())[:8]))
            if r.get("api_requests"):
                print("    apiserver requests during the round (all clients; count, mean server-side ms): " +
                      ", ".join(f"{k} {c} {ms:g}" for k, (c, ms) in list(r["api_requests"].items())[:8]) +
                      f"; {r['api_requests_total']} in all, {r['api_requests_per_second']:g}/s, "
                      f"{r['api_requests_in_flight']:g} in flight on average")
            if r.get("trace"):
                t = r["trace"]
                print(f"    trace (watch, s, p50/p90/max over {t['preemptors_traced']} preemptors): " + "; ".join(
                    f"{k.replace('_', ' ')} {v['p50']:g}/{v['p90']:g}/{v['max']:g}"
                    for k, v in t.items() if isinstance(v, dict)))
            if r["bound"] < r["pods"]:
                print(f"    NOT ALL BOUND (PodScheduled True) when the round ended ({r['wall_seconds']} s; the timeout, "
                      "or every pod had a node in the watch); the others, by reason:")
                for why, count in sorted(r.get("waiting", {}).items(), key=lambda kv: -kv[1])[:5]:
                    print(f"      {count} x {why}")
    cols = [(f"{w}-{i}", r["bound_over_time"]) for w, rs in rows.items() for i, r in enumerate(rs, 1)
            if r.get("bound_over_time")]
    if not cols:
        return 0
    n = max(len(c[1]) for c in cols)
    csv_path = f"{out}/{workload}-bound_over_time.csv"
    with open(csv_path, "w") as f:
        f.write("seconds," + ",".join(name for name, _ in cols) + "\n")
        for j in range(n):
            f.write(f"{j * 0.5:.1f}," + ",".join(str(s[j][1] if j < len(s) else s[-1][1]) for _, s in cols) + "\n")
    png_path = csv_path[:-4] + ".png"
    how = plot(csv_path, png_path, f"{title}: pods bound over time", [name for name, _ in cols])
    print(f"series: {csv_path}\nplot: {png_path} ({how})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
