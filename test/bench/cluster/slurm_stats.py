#!/usr/bin/env python3
"""The Slurm side of one side_by_side.sh --slurm round, added to the round's JSON.

  slurm_stats.py JSON T0 T1 SDIAG_BEFORE SDIAG_AFTER SQUEUE [METRICS_PORT [PREFIX METRICS_BEFORE]]
  slurm_stats.py --metrics METRICS_PORT OUT   the daemon's counters now (for METRICS_BEFORE)
T0, T1: unix s when the scheduler was started and just before it was stopped. SQUEUE: `squeue -h
-a -t all -o '%i|%V|%S|%T'` taken at T1 (MinJobAge keeps finished jobs listed). Adds:
  slurm_jobs_submitted       jobs submitted in [T0, T1] (the churn)
  slurm_jobs_started         of them, started by T1
  slurm_jobs_waiting_10s     of them, submitted more than 10 s before T1 and still pending at T1
                             (starved by the pod backlog, or waiting for a poll)
  slurm_job_wait_p50/max     submit -> start of the started ones, s (Slurm's 1 s resolution)
  slurm_rpcs_per_minute      slurmctld RPCs (sdiag, every client: slurmrestd for the daemon, the
                             daemon's squeue and scontrol, the churn's sbatch) per minute of [T0, T1]
  slurm_rpcs                 the same by message type (count in the round)
and for onequeue (METRICS_PORT: its /metrics) the daemon's counters since it started:
  cycles_total, arrival_cycles_total, full_cycles_total (the difference), slurm_polls_total,
  slurm_polls_per_minute, slurm_jobs_started_by_onequeue; first_cycle_after_sync_s from its log
  (LOG: JSON with .log for .json: the first "cycle:" line after "informers synced": the first
  Slurm poll, and the fences of the first reconcile, come before it).
PREFIX and METRICS_BEFORE (side_by_side.sh's tail: the daemon kept running after the round, pods
all bound, churn on): every key above is written as PREFIX+key, the counters as differences from
METRICS_BEFORE. Python standard library only.
"""
import json
import os
import re
import statistics
import sys
import urllib.request
from datetime import datetime

RPC = re.compile(r"^\s*([A-Z_]+)\s+\(\s*\d+\)\s+count:(\d+)")


def rpcs(path):
    """sdiag's 'statistics by message type' section: type -> count (the by-user section follows)."""
    counts, section = {}, False
    for line in open(path, errors="replace"):
        if "by message type" in line:
            section = True
        elif "by user" in line:
            break
        elif section and (m := RPC.match(line)):
            counts[m.group(1)] = int(m.group(2))
    return counts


def stamp(s):
    try:
        return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S").timestamp()  # squeue prints local time
    except ValueError:
        return None


def jobs(path, t0, t1):
    submitted, waits, waiting = 0, [], 0
    for line in open(path, errors="replace"):
        parts = line.strip().split("|")
        if len(parts) != 4:
            continue
        sub, start, state = stamp(parts[1]), stamp(parts[2]), parts[3]
        if sub is None or not (int(t0) <= sub <= t1):
            continue
        submitted += 1
        if state != "PENDING" and start is not None and start <= t1 + 1:
            waits.append(start - sub)
        elif state == "PENDING" and sub < t1 - 10:
            waiting += 1
    return submitted, waits, waiting


def first_cycle_after_sync(log):
    t = {}
    for line in open(log, errors="replace"):
        for key, what in (("sync", "informers synced"), ("cycle", "] cycle: ")):
            if key not in t and what in line and (key == "sync" or "sync" in t):
                t[key] = datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S.%f").timestamp()
        if "cycle" in t:
            return round(t["cycle"] - t["sync"], 3)
    return float("nan")


def metrics(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    def total(name):
        return sum(float(m.group(1)) for m in re.finditer(rf"^{name}(?:{{[^}}]*}})? ([0-9.e+]+)$", text, re.M))
    return total("onequeue_cycles_total"), total("onequeue_arrival_cycles_total"), \
        total("onequeue_slurm_polls_total"), total("onequeue_slurm_jobs_started_total")


def main(argv):
    if argv[0] == "--metrics":
        json.dump(metrics(argv[1]), open(argv[2], "w"))
        return 0
    path, t0, t1 = argv[0], float(argv[1]), float(argv[2])
    whole = json.load(open(path))
    prefix = argv[7] if len(argv) > 7 else ""
    d = {}
    minutes = (t1 - t0) / 60
    before, after = rpcs(argv[3]), rpcs(argv[4])
    delta = {k: after[k] - before.get(k, 0) for k in after if after[k] - before.get(k, 0) > 0}
    d["slurm_rpcs"] = dict(sorted(delta.items(), key=lambda kv: -kv[1]))
    d["slurm_rpcs_per_minute"] = round(sum(delta.values()) / minutes, 1) if minutes > 0 else float("nan")
    submitted, waits, waiting = jobs(argv[5], t0, t1)
    d["slurm_jobs_submitted"], d["slurm_jobs_started"], d["slurm_jobs_waiting_10s"] = submitted, len(waits), waiting
    d["slurm_job_wait_p50"] = statistics.median(waits) if waits else float("nan")
    d["slurm_job_wait_max"] = max(waits) if waits else float("nan")
    d["slurm_window_seconds"] = round(t1 - t0, 1)
    if len(argv) > 6 and argv[6]:
        try:
            cycles, arrivals, polls, started = metrics(argv[6])
            if prefix:
                b = json.load(open(argv[8]))
                cycles, arrivals, polls, started = cycles - b[0], arrivals - b[1], polls - b[2], started - b[3]
            else:
                log = path[:-5] + ".log"
                d["first_cycle_after_sync_s"] = first_cycle_after_sync(log) if os.path.exists(log) else float("nan")
            d.update(cycles_total=cycles, arrival_cycles_total=arrivals, full_cycles_total=cycles - arrivals,
                     slurm_polls_total=polls, slurm_jobs_started_by_onequeue=started,
                     slurm_polls_per_minute=round(polls / minutes, 1) if minutes > 0 else float("nan"))
        except OSError as e:
            print(f"slurm_stats: /metrics on port {argv[6]}: {e}", file=sys.stderr)
    whole.update({prefix + k: v for k, v in d.items()})
    json.dump(whole, open(path, "w"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
