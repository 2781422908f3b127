#!/usr/bin/env python3
"""Generates the workload shapes of issue 15 part 3 and issue 27 (docs/simulate.md "The default
policy", docs/queue.md "Starvation").

Each shape is an SWF trace of 3,000 jobs on 128 processors (one node per processor), written
with a fixed seed so the committed files can be re-made byte for byte:

  shape_bursty.swf         bursts of 40-150 jobs every few hours on top of a light stream
  shape_many_small.swf     85 % of the jobs ask 1-4 processors for minutes
  shape_few_huge.swf       3 % of the jobs ask 64-128 processors for hours; the rest is mixed
  shape_overestimated.swf  heavy over-estimation: users ask 5-50x the run time, 30 % ask the
                           24 h maximum, 15 % of the jobs fail within two minutes
  shape_heavy_steady.swf   issue 27: 4 heavy users submit half of the jobs, mostly 1-4 processors
                           for minutes, and a few wide long ones (64-128 processors, 2-10 h)
  shape_heavy_bursts.swf   the same with the heavy users' small jobs in dumps of 30-120 jobs

Every job: field 4 run time, field 9 requested time (>= run time: nobody is cut at the limit),
fields 12-13 user and group (40 users in 8 groups; each user keeps habits: typical size, run time
and over-estimation factor), field 15 queue (1-3). Offered load is 80-95 %: waiting matters.

Usage: generate_shapes.py [--jobs N] [--seed-base S] [OUTPUT_DIR [SHAPE,SHAPE...]]
  (default: 3,000 jobs, seed base 1500, this file's directory, every shape; the replay-speed
  figure of docs/simulate.md uses `--jobs 200000 /tmp heavy_steady`, which is not committed;
  other seed bases give other draws of the same shapes, docs/queue.md "How much six traces say")
"""
import math
import os
import random
import sys

PROCS = 128
JOBS = 3000
USERS = 40
GROUPS = 8


def log_uniform(rng, lo, hi):
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def round_request(seconds):
    """Users ask round numbers: up to the next 5 minutes (at least 5 minutes)."""
    return max(300, int(math.ceil(seconds / 300.0)) * 300)


class User:
    def __init__(self, rng, uid):
        self.uid = uid
        self.gid = 1 + (uid - 1) % GROUPS
        self.size_exp = rng.randint(0, 5)          # typical size 2^k
        self.run_scale = log_uniform(rng, 120, 4 * 3600)  # typical run time
        self.overestimate = rng.uniform(1.2, 4.0)  # requested / run, roughly
        self.queue = rng.randint(1, 3)


def job_line(number, submit, run, procs, req, user):
    return "%6d %10d -1 %7d %4d -1 -1 %4d %7d -1 1 %3d %2d -1 %d -1 -1 -1" % (
        number, submit, run, procs, procs, req, user.uid, user.gid, user.queue)


def header(name, note):
    return [
        "; Version: 2.2",
        "; Computer: onequeue generated workload '%s' (test/queue/traces/generate_shapes.py)" % name,
        "; Note: %s" % note,
        "; Note: 128 processors, one node each; requested time (field 9) >= run time (field 4).",
        "; MaxJobs: %d" % JOBS,
        "; MaxRecords: %d" % JOBS,
        "; MaxNodes: %d" % PROCS,
        "; MaxProcs: %d" % PROCS,
        ";",
    ]


def stream(rng, users, load, size_fn, run_fn, req_fn, arrivals_fn=None):
    """Jobs with sizes/run times/requests from the functions, Poisson arrivals at `load`."""
    jobs = []
    for _ in range(JOBS):
        u = rng.choice(users)
        procs = size_fn(rng, u)
        run = run_fn(rng, u)
        req = req_fn(rng, u, run)
        jobs.append([procs, run, req, u])
    work = sum(p * r for p, r, _, _ in jobs)
    mean_gap = work / (load * PROCS * JOBS)
    out = []
    t = 0
    times = arrivals_fn(rng, mean_gap) if arrivals_fn else None
    for i, (procs, run, req, u) in enumerate(jobs):
        if times is not None:
            t = times[i]
        else:
            t += int(rng.expovariate(1.0 / mean_gap))
        out.append((t, run, procs, req, u))
    out.sort(key=lambda j: j[0])
    return [job_line(i + 1, t, run, procs, req, u) for i, (t, run, procs, req, u) in enumerate(out)]


def habit_size(rng, u):
    k = min(7, max(0, u.size_exp + rng.choice([-1, 0, 0, 1])))
    procs = 2 ** k
    if rng.random() < 0.3:
        procs = max(1, procs - rng.randint(0, procs // 2))
    return min(PROCS, procs)


def habit_run(rng, u):
    return max(10, int(u.run_scale * log_uniform(rng, 0.1, 3.0)))


def habit_request(rng, u, run):
    return round_request(run * u.overestimate * rng.uniform(0.9, 1.5))


def bursty(rng, users):
    def arrivals(rng, mean_gap):
        # 60 % of the jobs arrive in bursts of 40-150 at one instant-ish (a few seconds apart),
        # the rest as a light Poisson stream; bursts every few hours.
        span = int(mean_gap * JOBS)
        times = []
        left = int(JOBS * 0.6)
        while left > 0:
            n = min(left, rng.randint(40, 150))
            at = rng.randint(0, span)
            times += [at + rng.randint(0, 60) for _ in range(n)]
            left -= n
        times += [rng.randint(0, span) for _ in range(JOBS - len(times))]
        return sorted(times)
    return stream(rng, users, 0.85, habit_size, habit_run, habit_request, arrivals)


def many_small(rng, users):
    def size(rng, u):
        return rng.randint(1, 4) if rng.random() < 0.85 else habit_size(rng, u)

    def run(rng, u):
        return int(log_uniform(rng, 30, 1800)) if rng.random() < 0.85 else habit_run(rng, u)
    return stream(rng, users, 0.9, size, run, habit_request)


def few_huge(rng, users):
    def size(rng, u):
        return rng.randint(64, PROCS) if rng.random() < 0.03 else habit_size(rng, u)

    def run(rng, u):
        return habit_run(rng, u)

    def size_and_run_request(rng, u, run):
        return habit_request(rng, u, run)
    return stream(rng, users, 0.85, size, run, size_and_run_request)


def overestimated(rng, users):
    def run(rng, u):
        if rng.random() < 0.15:
            return rng.randint(5, 120)  # failed at start
        return habit_run(rng, u)

    def request(rng, u, run):
        if rng.random() < 0.3:
            return 24 * 3600
        return min(24 * 3600, max(run, round_request(run * rng.uniform(5, 50))))
    return stream(rng, users, 0.9, habit_size, run, request)


def heavy_users(rng, users, bursts):
    """Issue 27's starvation workload: 4 heavy users submit half of the jobs, mostly 1-4
    processors for minutes (in dumps of 30-120 jobs when `bursts`), and a few wide long jobs
    (64-128 processors for 2-10 hours, 2 % of their jobs); the 36 other users keep their habits.
    Under fair-share the heavy users' wide jobs are overtaken by everyone's small ones."""
    heavy = users[:4]
    light = users[4:]
    jobs = []
    for _ in range(JOBS):
        if rng.random() < 0.5:
            u = rng.choice(heavy)
            if rng.random() < 0.02 * 2:  # 4 % of the heavy users' jobs, 2 % of all
                procs = rng.randint(64, PROCS)
                run = int(log_uniform(rng, 2 * 3600, 10 * 3600))
            else:
                procs = rng.randint(1, 4)
                run = int(log_uniform(rng, 60, 1800))
            req = habit_request(rng, u, run)
        else:
            u = rng.choice(light)
            procs = habit_size(rng, u)
            run = habit_run(rng, u)
            req = habit_request(rng, u, run)
        jobs.append([procs, run, req, u])
    load = 0.9
    work = sum(p * r for p, r, _, _ in jobs)
    mean_gap = work / (load * PROCS * JOBS)
    span = int(mean_gap * JOBS)
    times = []
    t = 0
    burst_at = None
    burst_left = 0
    for procs, run, req, u in jobs:
        if bursts and u in heavy and procs <= 4:
            if burst_left == 0:
                burst_at = rng.randint(0, span)
                burst_left = rng.randint(30, 120)
            times.append(burst_at + rng.randint(0, 30))
            burst_left -= 1
        else:
            t += int(rng.expovariate(1.0 / (mean_gap * (2 if bursts else 1))))
            times.append(t if not bursts else rng.randint(0, span))
    out = sorted(zip(times, range(len(jobs))))
    lines = []
    for i, (at, k) in enumerate(out):
        procs, run, req, u = jobs[k]
        lines.append(job_line(i + 1, at, run, procs, req, u))
    return lines


def heavy_steady(rng, users):
    return heavy_users(rng, users, bursts=False)


def heavy_bursts(rng, users):
    return heavy_users(rng, users, bursts=True)


SHAPES = [
    ("bursty", bursty, "bursts of 40-150 jobs at a few instants, a light stream between, 85 % load"),
    ("many_small", many_small, "85 % of the jobs ask 1-4 processors for 30 s - 30 min, 90 % load"),
    ("few_huge", few_huge, "3 % of the jobs ask 64-128 processors, the rest mixed, 85 % load"),
    ("overestimated", overestimated,
     "requests 5-50x the run time, 30 % ask the 24 h maximum, 15 % fail within 2 min, 90 % load"),
    ("heavy_steady", heavy_steady,
     "4 heavy users: half of the jobs, 1-4 processors for minutes, 4 % of theirs 64-128 for hours; 90 % load"),
    ("heavy_bursts", heavy_bursts,
     "heavy_steady with the heavy users' small jobs in dumps of 30-120; 90 % load"),
]


def main():
    global JOBS
    argv = sys.argv[1:]
    if "--jobs" in argv:  # e.g. the 200,000-job replay-speed trace (not committed)
        i = argv.index("--jobs")
        JOBS = int(argv[i + 1])
        del argv[i:i + 2]
    seed_base = 1500  # the committed files
    if "--seed-base" in argv:
        i = argv.index("--seed-base")
        seed_base = int(argv[i + 1])
        del argv[i:i + 2]
    out_dir = argv[0] if argv else os.path.dirname(os.path.abspath(__file__))
    only = argv[1].split(",") if len(argv) > 1 else None
    for i, (name, fn, note) in enumerate(SHAPES):
        if only and name not in only:
            continue
        rng = random.Random(seed_base + i)
        users = [User(rng, uid) for uid in range(1, USERS + 1)]
        lines = header(name, note) + fn(rng, users)
        with open(os.path.join(out_dir, "shape_%s.swf" % name), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
