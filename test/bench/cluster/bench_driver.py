#!/usr/bin/env python3
"""Load generator and meter for test/bench/cluster/side_by_side.sh (run by hand, never by ctest).

Python standard library only. Talks to the local apiserver that test/cluster/up.sh started, with the
admin token from DIR/env:
  bench_driver.py DIR nodes N POOL            create N kwok nodes (4 CPU, 32 GiB, 110 pods; label
                                              onequeue.io/pool=POOL) as scheduler_perf's defaults,
                                              and the PriorityClasses low (1) and high (10); the
                                              first $BENCH_SLURM_NODES (default 0) with 8 CPUs, as
                                              the local Slurm's nodes (side_by_side.sh --slurm)
  bench_driver.py DIR create NS SCHED N [--shape S]
                                              create N pods of shape S with schedulerName SCHED in
                                              namespace NS (backlog mode: before the scheduler starts)
  bench_driver.py DIR fill NS SCHED N         create N low-priority pods and wait until all are bound
                                              (the preemption workload's full pool; not measured)
  bench_driver.py DIR requests FILE           the apiserver's request totals now (for --requests-before)
  bench_driver.py DIR round NS SCHED N OUT [--since T] [--shape S] [--victims-ns NS2] [--requests-before FILE]
                                              create N pods of shape S (unless --since: backlog mode,
                                              the pods exist and the clock starts at T, unix s), wait
                                              until all are bound, write figures (JSON) to OUT;
                                              --victims-ns: count the pods of NS2 that went meanwhile;
                                              the apiserver's requests are counted from FILE's totals
                                              (backlog: taken before the scheduler started), else from
                                              the round's start
  bench_driver.py DIR events NS SCHED N SINCE OUT
                                              wait until SCHED's Scheduled events written since SINCE
                                              (unix s) in NS reach N or stop coming for 5 s; add to
                                              OUT's JSON how many and how long after the round's last
                                              binding (events_drained_seconds): a scheduler that writes
                                              its events after its bindings is measured with their cost
  bench_driver.py DIR cleanup NS...           delete every pod of each NS and wait until they are gone
  bench_driver.py DIR slurm-nodes N           label kwok nodes bench-node-0..N-1 onequeue.io/slurm-node=
                                              n1..nN (the pool nodes Slurm knows too: side_by_side.sh --slurm)
  bench_driver.py DIR slurm-reset N           remove what a daemon with Slurm on wrote on those nodes (the
                                              onequeue.io/owner annotation, label and taint), so that every
                                              round starts from the same nodes
Shapes (scheduler_perf's templates): basic (cpu 100m, memory 500Mi: SchedulingBasic), low
(900m/500Mi, PriorityClass low, onequeue.io/qos low: four fill a node), high (BENCH_PREEMPTOR_CPU,
default scheduler_perf's 3000m, /500Mi, PriorityClass high, onequeue.io/qos high: each needs three
victims; 900m needs exactly one), gang (basic, in groups of BENCH_GANG_SIZE (8): onequeue.io/group
and onequeue.io/group-size). Every pod carries the same spec for both schedulers but schedulerName
(kube-scheduler ignores onequeue's annotations).
Figures come from the API's own timestamps: metadata.creationTimestamp and the PodScheduled
condition's lastTransitionTime, which the apiserver sets when it stores the binding (both have
one-second resolution). A watch opened before the first create also records when this client saw
each pod created and bound (millisecond resolution) as a cross-check and for the bound-over-time
series.
"""
import concurrent.futures
import http.client
import json
import os
import ssl
import sys
import threading
import time
from datetime import datetime, timezone

CREATE_THREADS = 32


def read_env(directory):
    env = {}
    with open(os.path.join(directory, "env")) as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition("=")
            env[k] = v
    return env


class Api:
    def __init__(self, env):
        server = env["ONEQUEUE_K8S_SERVER"]
        self.hostport = server.split("://", 1)[1]
        self.token = env["ONEQUEUE_ADMIN_TOKEN"]
        self.ctx = ssl.create_default_context(cafile=env["ONEQUEUE_K8S_CA"])
        self.local = threading.local()

    def conn(self, fresh=False):
        if fresh or getattr(self.local, "c", None) is None:
            self.local.c = http.client.HTTPSConnection(self.hostport, context=self.ctx, timeout=120)
        return self.local.c

    def call(self, method, path, body=None, ok=(200, 201, 202), content_type="application/json"):
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": "Bearer " + self.token, "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in range(5):
            try:
                c = self.conn(fresh=attempt > 0)
                c.request(method, path, body=data, headers=headers)
                r = c.getresponse()
                payload = r.read()
                if r.status in ok:
                    return json.loads(payload) if payload else None
                if r.status == 409:
                    return None
                if r.status in (429, 500, 503, 504):
                    time.sleep(0.2 * (attempt + 1))
                    continue
                raise RuntimeError(f"{method} {path}: HTTP {r.status}: {payload[:300]!r}")
            except (http.client.HTTPException, OSError):
                if attempt == 4:
                    raise
                time.sleep(0.2 * (attempt + 1))
        raise RuntimeError(f"{method} {path}: gave up")

    def text(self, path):
        c = http.client.HTTPSConnection(self.hostport, context=self.ctx, timeout=60)
        try:
            c.request("GET", path, headers={"Authorization": "Bearer " + self.token})
            r = c.getresponse()
            return r.read().decode() if r.status == 200 else ""
        finally:
            c.close()

    def list_all(self, path):
        items, cont = [], ""
        while True:
            sep = "&" if "?" in path else "?"
            page = self.call("GET", f"{path}{sep}limit=2000" + (f"&continue={cont}" if cont else ""))
            items += page.get("items", [])
            cont = page["metadata"].get("continue", "")
            if not cont:
                return items, page["metadata"]["resourceVersion"]


def run_parallel(count, fn):
    with concurrent.futures.ThreadPoolExecutor(CREATE_THREADS) as pool:
        for f in [pool.submit(fn, i) for i in range(count)]:
            f.result()


def make_nodes(api, n, pool_name):
    # side_by_side.sh --slurm: the first BENCH_SLURM_NODES nodes stand for Slurm nodes, which have 8
    # CPUs (test/cluster/slurm-up.sh): the daemon plans a Slurm job against the Kubernetes node's
    # capacity, so the two must agree, or jobs Slurm packs onto a lent node overfill it in the plan.
    slurm_nodes = int(os.environ.get("BENCH_SLURM_NODES", "0"))

    def one(i):
        name = f"bench-node-{i}"
        res = {"cpu": "8" if i < slurm_nodes else "4", "memory": "32Gi", "pods": "110"}
        api.call("POST", "/api/v1/nodes", {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "labels": {"kubernetes.io/hostname": name, "type": "kwok",
                                    "onequeue.io/pool": pool_name},
                         "annotations": {"kwok.x-k8s.io/node": "fake"}},
            "status": {"capacity": res, "allocatable": res}})
    # The preemption workload's priorities (scheduler_perf: low pods 0, high pods 10). A pod may
    # not carry spec.priority itself past the Priority admission plugin, so they are classes.
    for name, value in (("low", 1), ("high", 10)):
        api.call("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, "preemptionPolicy": "PreemptLowerPriority"})
    t = time.time()
    run_parallel(n, one)
    # kwok marks them Ready; wait for that so neither scheduler sees a NotReady node.
    while True:
        nodes, _ = api.list_all("/api/v1/nodes?labelSelector=onequeue.io/pool%3D" + pool_name)
        ready = sum(1 for nd in nodes for c in nd.get("status", {}).get("conditions", [])
                    if c["type"] == "Ready" and c["status"] == "True")
        if ready >= n:
            break
        time.sleep(1)
    print(f"driver: {n} nodes created and Ready in {time.time() - t:.1f} s", file=sys.stderr)


SLURM_NODE_LABEL = "onequeue.io/slurm-node"
OWNER = "onequeue.io/owner"


def slurm_nodes(api, n):
    """The first N bench nodes stand for Slurm nodes n1..nN (the daemon's slurm.nodeLabel)."""
    def one(i):
        api.call("PATCH", f"/api/v1/nodes/bench-node-{i}",
                 {"metadata": {"labels": {SLURM_NODE_LABEL: f"n{i + 1}"}}},
                 content_type="application/merge-patch+json")
    run_parallel(n, one)


def slurm_reset(api, n):
    """Ownership marks a Slurm-on daemon left on the shared nodes, gone: a lent node's NoSchedule
    taint would keep the next round's kube-scheduler off it."""
    def one(i):
        path = f"/api/v1/nodes/bench-node-{i}"
        node = api.call("GET", path)
        taints = [t for t in node.get("spec", {}).get("taints", []) if t.get("key") != OWNER]
        api.call("PATCH", path, {"metadata": {"annotations": {OWNER: None}, "labels": {OWNER: None}},
                                 "spec": {"taints": taints or None}},
                 content_type="application/merge-patch+json")
    run_parallel(n, one)


def parse_time(s):
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def pct(values, p):
    v = sorted(values)
    if not v:
        return float("nan")
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def watch(api, ns, rv, seen_created, seen_bound, stop, seen_nominated=None):
    """Records this client's first sight of each pod (ADDED), of its nominatedNodeName and of its
    nodeName."""
    def on_event(kind, obj, now):
        if kind not in ("ADDED", "MODIFIED"):
            return
        name = obj["metadata"]["name"]
        seen_created.setdefault(name, now)
        if seen_nominated is not None and obj.get("status", {}).get("nominatedNodeName"):
            seen_nominated.setdefault(name, now)
        if obj.get("spec", {}).get("nodeName"):
            seen_bound.setdefault(name, now)
    watch_events(api, ns, rv, stop, on_event)


def watch_events(api, ns, rv, stop, on_event):
    """Calls on_event(type, object, time seen) for each event of NS's pods from rv on until stop."""
    while not stop.is_set():
        c = http.client.HTTPSConnection(api.hostport, context=api.ctx, timeout=30)
        try:
            c.request("GET", f"/api/v1/namespaces/{ns}/pods?watch=1&allowWatchBookmarks=true"
                             f"&resourceVersion={rv}&timeoutSeconds=600",
                      headers={"Authorization": "Bearer " + api.token})
            r = c.getresponse()
            while not stop.is_set():
                line = r.readline()
                if not line:
                    break
                now = time.time()
                ev = json.loads(line)
                obj = ev["object"]
                rv = obj.get("metadata", {}).get("resourceVersion", rv)
                if ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
                    on_event(ev["type"], obj, now)
        except (OSError, http.client.HTTPException, ValueError):
            time.sleep(0.1)
        finally:
            c.close()


def watch_victims(api, ns, rv, victims, stop):
    """Issue 26's trace: for each pod of the victims' namespace, its node and when this client first
    saw its DisruptionTarget condition (the scheduler's first write for a victim it removes), its
    deletionTimestamp, and its deletion (DELETED)."""
    def on_event(kind, obj, now):
        v = victims.setdefault(obj["metadata"]["name"], {})
        if obj.get("spec", {}).get("nodeName"):
            v["node"] = obj["spec"]["nodeName"]
        if any(cond.get("type") == "DisruptionTarget" for cond in obj.get("status", {}).get("conditions", [])):
            v.setdefault("disruption", now)
        if obj["metadata"].get("deletionTimestamp"):
            v.setdefault("deleting", now)
        if kind == "DELETED":
            v.setdefault("gone", now)
    watch_events(api, ns, rv, stop, on_event)


def preemption_trace(pods, seen_created, seen_nominated, seen_bound, victims):
    """Per preemptor (watch times): creation, nomination, its victims' first removal write
    (DisruptionTarget, else deletionTimestamp, else deletion), its last victim gone, bound; the
    victims are the pods of the victims' namespace deleted from the node it was bound to. The
    distributions (p50, p90, max in s) of creation -> first removal (the decision), first removal ->
    last victim gone (the victims' deletion) and last victim gone -> bound (the scheduler's own wait
    once the room is free, the binding's request included)."""
    by_node = {}
    for name, v in victims.items():
        if "gone" in v and "node" in v:
            by_node.setdefault(v["node"], []).append(v)
    rows = []
    for p in pods:
        name, node = p["metadata"]["name"], p["spec"].get("nodeName")
        vs = by_node.get(node, [])
        if not node or not vs or name not in seen_bound or name not in seen_created:
            continue
        first = min(v.get("disruption", v.get("deleting", v["gone"])) for v in vs)
        rows.append({"pod": name, "created": seen_created[name], "nominated": seen_nominated.get(name),
                     "first_removal": first, "last_gone": max(v["gone"] for v in vs), "bound": seen_bound[name],
                     "victims": len(vs)})
    def dist(values):
        return {"p50": round(pct(values, 50), 3), "p90": round(pct(values, 90), 3),
                "max": round(max(values), 3) if values else float("nan")}
    return {
        "preemptors_traced": len(rows),
        "created_to_nominated": dist([r["nominated"] - r["created"] for r in rows if r["nominated"]]),
        "created_to_first_removal": dist([r["first_removal"] - r["created"] for r in rows]),
        "first_removal_to_last_victim_gone": dist([r["last_gone"] - r["first_removal"] for r in rows]),
        "last_victim_gone_to_bound": dist([r["bound"] - r["last_gone"] for r in rows]),
        "created_to_bound": dist([r["bound"] - r["created"] for r in rows]),
    }, rows


def request_totals(api):
    """The apiserver's own request counts and summed latencies by verb, resource and subresource
    (apiserver_request_duration_seconds), to tell what a scheduler asked of it during a round and
    how long the apiserver itself took per request (long-running watches excluded)."""
    totals = {}
    for line in api.text("/metrics").splitlines():
        if not line.startswith("apiserver_request_duration_seconds_"):
            continue
        name, _, value = line.rpartition(" ")
        kind = "sum" if name.startswith("apiserver_request_duration_seconds_sum{") else \
            "count" if name.startswith("apiserver_request_duration_seconds_count{") else None
        if kind is None:
            continue
        labels = dict(kv.split("=", 1) for kv in name[name.index("{") + 1:-1].split(",") if "=" in kv)
        labels = {k: v.strip('"') for k, v in labels.items()}
        if labels.get("verb") == "WATCH":
            continue
        key = f"{labels.get('verb')} {labels.get('resource')}" + (
            f"/{labels['subresource']}" if labels.get("subresource") else "")
        t = totals.setdefault(key, [0.0, 0.0])
        t[0 if kind == "count" else 1] += float(value)
    return totals


def request_delta(before, after):
    """{"VERB resource[/sub]": [count, mean server-side ms]} of the requests made in between, most first."""
    d = {}
    for k, (c1, s1) in after.items():
        c0, s0 = before.get(k, (0.0, 0.0))
        if c1 - c0 >= 1:
            d[k] = [int(c1 - c0), round((s1 - s0) / (c1 - c0) * 1000, 2)]
    return dict(sorted(d.items(), key=lambda kv: -kv[1][0]))


SHAPES = ("basic", "low", "high", "gang")


def gang_size():
    return int(os.environ.get("BENCH_GANG_SIZE", "8"))


def pod_body(ns, sched, shape, i):
    """One pod of the shape (see the module's doc); the same for both schedulers but schedulerName."""
    cpu, limits, annotations, spec = "100m", False, {}, {}
    if shape == "low":  # scheduler_perf pod-low-priority.yaml
        cpu, limits = "900m", True
        spec["priorityClassName"] = "low"
        annotations["onequeue.io/qos"] = "low"
    elif shape == "high":  # scheduler_perf pod-high-priority.yaml
        cpu, limits = os.environ.get("BENCH_PREEMPTOR_CPU", "3000m"), True
        spec["priorityClassName"] = "high"
        annotations["onequeue.io/qos"] = "high"
    elif shape == "gang":
        annotations["onequeue.io/group"] = f"g-{i // gang_size()}"
        annotations["onequeue.io/group-size"] = str(gang_size())
    res = {"cpu": cpu, "memory": "500Mi"}
    container = {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": res}}
    if limits:
        container["resources"]["limits"] = dict(res)
    meta = {"name": f"pod-{i}", "namespace": ns}
    if annotations:
        meta["annotations"] = annotations
    spec.update({"schedulerName": sched, "terminationGracePeriodSeconds": 0, "containers": [container]})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def ensure_namespace(api, ns):
    api.call("POST", "/api/v1/namespaces",
             {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})


def create_pods(api, ns, sched, n, shape="basic"):
    ensure_namespace(api, ns)
    base = f"/api/v1/namespaces/{ns}/pods"
    run_parallel(n, lambda i: api.call("POST", base, pod_body(ns, sched, shape, i)))


def count_bound(api, ns):
    pods, _ = api.list_all(f"/api/v1/namespaces/{ns}/pods")
    return sum(1 for p in pods if p["spec"].get("nodeName")), len(pods)


def fill(api, ns, sched, n, timeout):
    """The preemption workload's full pool: N low-priority pods, all bound (by the scheduler under
    test, as scheduler_perf's initPods), before the measured preemptors arrive."""
    t = time.time()
    create_pods(api, ns, sched, n, "low")
    bound = 0
    while time.time() < t + timeout:
        bound, _ = count_bound(api, ns)
        if bound >= n:
            print(f"driver: pool filled with {n} low-priority pods in {time.time() - t:.1f} s", file=sys.stderr)
            return 0
        time.sleep(1)
    print(f"driver: only {bound} of {n} low-priority pods bound within {timeout} s", file=sys.stderr)
    return 1


def round_(api, ns, sched, n, out, timeout, backlog_since=None, shape="basic", victims_ns=None,
           requests_before=None):
    """Streaming (backlog_since None): the scheduler runs, the pods are created now. Backlog: the
    pods exist already (created before the scheduler started, `create`); the clock starts at
    backlog_since, when the scheduler had synced, and only throughput is meaningful."""
    ensure_namespace(api, ns)
    base = f"/api/v1/namespaces/{ns}/pods"
    left, rv = api.list_all(base)
    if left and backlog_since is None:
        raise RuntimeError(f"namespace {ns} still has {len(left)} pods")
    victims_list, victims_rv = api.list_all(f"/api/v1/namespaces/{victims_ns}/pods") if victims_ns else ([], "")
    victims_before = len(victims_list)
    if requests_before is None:
        requests_before = request_totals(api)
    seen_created, seen_bound, seen_nominated, victims, stop = {}, {}, {}, {}, threading.Event()
    victims_stop = threading.Event()  # later than stop: the last victims' DELETED events
    if backlog_since is not None:
        listed_at = time.time()  # pods bound already: seen bound by now at the latest
        for p in left:
            seen_created[p["metadata"]["name"]] = backlog_since
            if p["spec"].get("nodeName"):
                seen_bound[p["metadata"]["name"]] = listed_at
    w = threading.Thread(target=watch, args=(api, ns, rv, seen_created, seen_bound, stop, seen_nominated),
                         daemon=True)
    w.start()
    if victims_ns:
        threading.Thread(target=watch_victims, args=(api, victims_ns, victims_rv, victims, victims_stop),
                         daemon=True).start()
    if backlog_since is None:
        time.sleep(0.5)
        t0 = time.time()
        create_pods(api, ns, sched, n, shape)
    else:
        t0 = backlog_since
    t_created = time.time()
    deadline = t0 + timeout
    while len(seen_bound) < n and time.time() < deadline:
        time.sleep(0.2)
    t_done = time.time()
    stop.set()
    api_requests = request_delta(requests_before, request_totals(api))
    pods, _ = api.list_all(base)
    created, bound, lat, waiting = [], [], [], {}
    for p in pods:
        c = parse_time(p["metadata"]["creationTimestamp"])
        created.append(c)
        scheduled = [cond for cond in p.get("status", {}).get("conditions", []) if cond["type"] == "PodScheduled"]
        if not p["spec"].get("nodeName"):
            # Why it still waits, as its scheduler wrote it (onequeue's reason and message,
            # kube-scheduler's "0/N nodes are available: ..."), counted.
            why = "no PodScheduled condition"
            for cond in scheduled:
                why = f"{cond.get('reason', '')}: {cond.get('message', '')}"[:200]
            if p["metadata"].get("deletionTimestamp"):
                why = "being deleted"
            waiting[why] = waiting.get(why, 0) + 1
        elif not any(cond["status"] == "True" for cond in scheduled):
            # Bound (spec.nodeName set) but the condition does not say so: a waiting report written
            # after the binding overwrote the True the apiserver set. Not counted as bound (no API
            # time), named here.
            why = "BOUND (spec.nodeName set) but PodScheduled is " + (
                f"{scheduled[0]['status']} {scheduled[0].get('reason', '')}: {scheduled[0].get('message', '')}"[:200]
                if scheduled else "absent")
            waiting[why] = waiting.get(why, 0) + 1
        for cond in p.get("status", {}).get("conditions", []):
            if cond["type"] == "PodScheduled" and cond["status"] == "True" and p["spec"].get("nodeName"):
                b = parse_time(cond["lastTransitionTime"])
                bound.append(b)
                lat.append(b - c)
    if backlog_since is not None:
        created = [float(int(backlog_since))] * len(created)  # the clock starts when the scheduler synced
        lat = []
    api_span = (max(bound) - min(created)) if bound else float("nan")
    w_lat = [seen_bound[k] - seen_created[k] for k in seen_bound if k in seen_created]
    w_span = (max(seen_bound.values()) - min(seen_created.values())) if seen_bound else float("nan")
    # Bound pods over time (this client's view), one point per 0.5 s, for plotting.
    series = []
    if seen_bound:
        times = sorted(seen_bound.values())
        start, k, t = min(seen_created.values()), 0, 0.0
        while t <= times[-1] - start + 0.5:
            while k < len(times) and times[k] - start <= t:
                k += 1
            series.append([round(t, 1), k])
            t += 0.5
    result = {
        "scheduler": sched, "shape": shape, "pods": n, "bound": len(bound),
        "create_seconds": round(t_created - t0, 2),
        "api_span_seconds": api_span,
        "pods_per_second_api": round(len(bound) / max(api_span, 1.0), 1) if bound else 0,
        "mode": "stream" if backlog_since is None else "backlog",
        "latency_p50_api": pct(lat, 50), "latency_p99_api": pct(lat, 99),
        "watch_span_seconds": round(w_span, 3),
        "pods_per_second_watch": round(len(seen_bound) / max(w_span, 1e-3), 1) if seen_bound else 0,
        "latency_p50_watch": round(pct(w_lat, 50), 3) if backlog_since is None else float("nan"),
        "latency_p99_watch": round(pct(w_lat, 99), 3) if backlog_since is None else float("nan"),
        "wall_seconds": round(t_done - t0, 2),
        "waiting": waiting,
        "api_requests": api_requests,
        "bound_over_time": series,
    }
    if victims_ns:
        # Pods of the victims' namespace that went (evicted or deleted by the scheduler) while the
        # preemptors were placed; nothing else deletes them during the round.
        after = len(api.list_all(f"/api/v1/namespaces/{victims_ns}/pods")[0])
        result["victims"] = victims_before - after
        result["victims_per_preemptor"] = round((victims_before - after) / len(bound), 2) if bound else float("nan")
    if victims_ns:
        time.sleep(0.5)
        victims_stop.set()
        result["trace"], rows = preemption_trace(pods, seen_created, seen_nominated, seen_bound, victims)
        with open(out + ".trace.json", "w") as f:
            json.dump(rows, f)
    if shape == "gang" and backlog_since is None:
        # A gang can start only once its last member exists: the gang's latency is from its last
        # member's creation to its last member's binding (watch).
        groups = {}
        for name, tb in seen_bound.items():
            if name in seen_created:
                g = groups.setdefault(int(name.split("-")[1]) // gang_size(), [0.0, 0.0, 0])
                g[0], g[1], g[2] = max(g[0], seen_created[name]), max(g[1], tb), g[2] + 1
        g_lat = [b - c for c, b, m in groups.values() if m == gang_size()]
        result["gangs_complete"] = len(g_lat)
        result["gang_latency_p50_watch"] = round(pct(g_lat, 50), 3)
        result["gang_latency_p99_watch"] = round(pct(g_lat, 99), 3)
    with open(out, "w") as f:
        json.dump(result, f)
    if len(bound) < n:
        print(f"driver: only {len(bound)} of {n} pods bound (PodScheduled True) within {timeout} s; the others: "
              f"{json.dumps(waiting)[:1000]}", file=sys.stderr)
        return 1
    return 0


def cleanup(api, ns):
    """Deletes every pod of NS (kwok removes a bound pod at once) and waits until none is left."""
    base = f"/api/v1/namespaces/{ns}/pods"
    api.call("DELETE", base + "?gracePeriodSeconds=0", ok=(200, 202))
    for _ in range(1200):
        left, _ = api.list_all(base)
        if not left:
            return 0
        time.sleep(0.5)
    print(f"driver: {len(left)} pods of {ns} still there after 10 min", file=sys.stderr)
    return 1


def scheduled_events(api, ns, sched, since):
    items, _ = api.list_all(f"/api/v1/namespaces/{ns}/events?fieldSelector=reason%3DScheduled")
    return sum(1 for e in items
               if (e.get("reportingComponent") or e.get("source", {}).get("component")) == sched
               and parse_time(e["metadata"]["creationTimestamp"]) >= int(since))


def events_drained(api, ns, sched, n, since, out, timeout):
    """After a round: waits for the scheduler's Scheduled events (one per pod bound)."""
    d = json.load(open(out))
    last_bound = time.time()
    seen, last_change, count = 0, time.time(), 0
    while time.time() < last_bound + timeout:
        count = scheduled_events(api, ns, sched, since)
        if count != seen:
            seen, last_change = count, time.time()
        if count >= n or time.time() - last_change > 5:
            break
        time.sleep(0.5)
    d["events_scheduled_seen"] = count
    # Seconds from the driver's end of the round (all pods seen bound) until the events were all
    # there (or stopped coming: then 5 s of that wait are not the scheduler's).
    d["events_drained_seconds"] = round((last_change if count < n else time.time()) - last_bound, 1)
    json.dump(d, open(out, "w"))
    print(f"driver: {count} of {n} Scheduled events from {sched}, drained {d['events_drained_seconds']} s after the round",
          file=sys.stderr)
    return 0


def flag(argv, name, default=None):
    return argv[argv.index(name) + 1] if name in argv else default


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    api = Api(read_env(argv[1]))
    timeout = float(os.environ.get("BENCH_ROUND_TIMEOUT", "600"))
    if argv[2] == "nodes":
        make_nodes(api, int(argv[3]), argv[4])
        return 0
    if argv[2] == "round":
        since = flag(argv, "--since")
        before = flag(argv, "--requests-before")
        return round_(api, argv[3], argv[4], int(argv[5]), argv[6], timeout,
                      float(since) if since else None, flag(argv, "--shape", "basic"), flag(argv, "--victims-ns"),
                      json.load(open(before)) if before else None)
    if argv[2] == "requests":
        with open(argv[3], "w") as f:
            json.dump(request_totals(api), f)
        return 0
    if argv[2] == "create":
        create_pods(api, argv[3], argv[4], int(argv[5]), flag(argv, "--shape", "basic"))
        return 0
    if argv[2] == "fill":
        return fill(api, argv[3], argv[4], int(argv[5]), timeout)
    if argv[2] == "events":
        return events_drained(api, argv[3], argv[4], int(argv[5]), float(argv[6]), argv[7], timeout)
    if argv[2] == "slurm-nodes":
        slurm_nodes(api, int(argv[3]))
        return 0
    if argv[2] == "slurm-reset":
        slurm_reset(api, int(argv[3]))
        return 0
    if argv[2] == "cleanup":
        return max(cleanup(api, ns) for ns in argv[3:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
