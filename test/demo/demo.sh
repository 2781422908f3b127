#!/usr/bin/env bash
# make demo: a local Kubernetes control plane (kube-apiserver, etcd, kube-controller-manager, kwok)
# and a local Slurm 22.05 (munge, slurmctld, 4 slurmd, slurmrestd with JWT); onequeue-scheduler runs
# against them under its own least-privilege identity, and the demo shows what users see:
# Slurm batch jobs running on pool nodes onequeue lent to Slurm, a Jupyter pod (QOS interactive)
# taking one back (the job there requeued once and run again later), then a batch queue of pods
# filling the pool, a Jupyter pod that preempts a batch pod and starts at once without the
# victim's replacement winning the node back, a gang that waits whole, a pod with a bad
# annotation, kubectl describe, and oq. Stops everything it started.
#   test/demo/demo.sh [BUILD_DIR]        (ONEQUEUE_DEMO_KEEP=1 leaves the clusters running)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
demo=$(mktemp -d /tmp/onequeue-demo.XXXXXX)
chmod 755 "$demo"  # slurm-up.sh needs the folder searchable by the slurm and munge users
sched_pid=""

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$ %s\n' "$*"; "$@"; }
cleanup() {
  [ -n "$sched_pid" ] && kill "$sched_pid" 2>/dev/null && wait "$sched_pid" 2>/dev/null || true
  if [ "${ONEQUEUE_DEMO_KEEP:-0}" = 1 ]; then
    echo "clusters left running: test/cluster/down.sh $demo/k8s; test/cluster/slurm-down.sh $demo/slurm"
    return
  fi
  bash "$root/test/cluster/slurm-down.sh" "$demo/slurm" >/dev/null 2>&1 || true
  bash "$root/test/cluster/down.sh" "$demo/k8s" >/dev/null 2>&1 || true
  rm -rf "$demo"
}
trap cleanup EXIT

say "Starting a local Kubernetes control plane (kube-apiserver, etcd, kube-controller-manager, kwok)"
bash "$root/test/cluster/up.sh" "$demo/k8s" --controller-manager --kwok >"$demo/k8s-up.log" 2>&1 \
  || { cat "$demo/k8s-up.log"; exit 1; }
# shellcheck disable=SC1091
source "$demo/k8s/env"
k() { "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" "$@"; }
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" version

say "Starting a local Slurm 22.05 (munge, slurmctld, 4 slurmd, slurmrestd with JWT)"
bash "$root/test/cluster/slurm-up.sh" "$demo/slurm" --nodes 4 >"$demo/slurm-up.log" 2>&1 \
  || { cat "$demo/slurm-up.log"; exit 1; }
# shellcheck disable=SC1091
source "$demo/slurm/slurm.env"
run env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/sinfo"

say "A pool of 4 nodes (4 CPUs each), labelled onequeue.io/pool=demo, each the Kubernetes face of Slurm node nK; kwok plays their kubelets"
for i in 1 2 3 4; do
  cat <<YAML
apiVersion: v1
kind: Node
metadata:
  name: pool-$i
  labels: {onequeue.io/pool: demo, onequeue.io/slurm-node: n$i, kubernetes.io/hostname: pool-$i, type: kwok}
  annotations: {kwok.x-k8s.io/node: fake}
spec:
  taints: [{key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}]
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
  capacity: {cpu: "4", memory: 16Gi, pods: "110"}
---
YAML
done | k apply -f - >/dev/null
k wait --for=condition=Ready node --all --timeout=60s >/dev/null
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" get nodes -L onequeue.io/pool

cat >"$demo/onequeue.yaml" <<YAML
apiVersion: onequeue.io/v1alpha1
kind: SchedulerConfiguration
schedulerName: onequeue
poolLabel: onequeue.io/pool=demo
kubernetes: {kubeconfig: $ONEQUEUE_SCHEDULER_KUBECONFIG, qps: 100, burst: 200}
queue:
  reservationDepth: 1
  resolutionSeconds: 60
  qos:
    - {name: interactive, priority: 1000, canPreempt: true, preemptible: false}
    - {name: batch, priority: 10}
slurm:
  enabled: true
  url: "$SLURMRESTD_URL"
  tokenFile: "$SLURM_JWT_FILE"
  user: $SLURM_USER
  apiVersion: v0.0.38
  lendMechanism: drain
  sharedPartitions: [batch]
  nodeLabel: onequeue.io/slurm-node
  lendAfterSeconds: 3
  returnAfterSeconds: 20
  pollIntervalSeconds: 1
  defaultQos: batch
  scontrolPath: "$SLURM_BIN/scontrol"
  slurmConf: "$SLURM_CONF"
server: {grpcAddress: "127.0.0.1:0"}
leaderElection: {enabled: false}
YAML
say "onequeue-scheduler, under its own RBAC identity ($ONEQUEUE_SCHEDULER_USER)"
run "$build/src/scheduler/onequeue-scheduler" --check-config --config "$demo/onequeue.yaml"
"$build/src/scheduler/onequeue-scheduler" --config "$demo/onequeue.yaml" >"$demo/scheduler.log" 2>&1 &
sched_pid=$!
sleep 1
grpc_port=$(grep -o 'on port [0-9]*' "$demo/scheduler.log" | head -1 | awk '{print $3}')
[ -n "$grpc_port" ] && run "$build/src/scheduler/oq" --server "127.0.0.1:$grpc_port" version

pod() { # name qos cpu [extra annotations yaml] [kind: ReplicaSet-managed via deployment]
  cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: research
  annotations: {onequeue.io/qos: "$2", onequeue.io/time-limit: "2h"${4:-}}
spec:
  schedulerName: onequeue
  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
  containers: [{name: main, image: busybox, resources: {requests: {cpu: "$3", memory: 1Gi}}}]
---
YAML
}
k create namespace research >/dev/null
S() { run env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/$@"; }
owners() { run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" get nodes -l onequeue.io/pool=demo -L onequeue.io/owner,onequeue.io/slurm-node; }
for _ in $(seq 60); do
  [ "$(k get nodes -l onequeue.io/owner=kubernetes -o name | wc -l)" -ge 4 ] && break
  sleep 0.5
done
say "An idle pool: onequeue owns it for Kubernetes and fences it on the Slurm side (drain tagged onequeue:kubernetes)"
owners
S sinfo -N -o "%N %P %T %E"

say "Slurm users submit 4 batch jobs (4 CPUs each): onequeue orders them in its queue and lends idle nodes to them"
for i in 1 2 3 4; do
  runuser -u "$SLURM_USER" -- env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/sbatch" -p batch -N1 -c4 -t 5 --requeue \
    -o /dev/null -D "$SLURM_JOBS_DIR" --wrap="sleep $((30 + 5 * i))" >/dev/null
done
for _ in $(seq 120); do
  [ "$(env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/squeue" -h -t R -p batch | wc -l)" -ge 4 ] && break
  sleep 0.5
done
S squeue -p batch -o "%.6i %.9P %.8T %.10M %.8N %k"
owners

say "A researcher's Jupyter pod (QOS interactive) needs a node now: onequeue reclaims one from Slurm"
echo "(reserve the node on both sides, requeue the Slurm job there once, bind the pod)"
pod jupyter-slurm interactive 2 | k apply -f - >/dev/null
for _ in $(seq 120); do
  [ -n "$(k -n research get pod jupyter-slurm -o jsonpath='{.spec.nodeName}')" ] && break
  sleep 0.5
done
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" -n research get pod jupyter-slurm -o wide
owners
S squeue -p batch -o "%.6i %.9P %.8T %.10r %.8N %k"
requeued=$(env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/squeue" -h -t PD -p batch -o %i | head -1)
[ -n "$requeued" ] && S scontrol show job "$requeued" | grep -E "JobState|Restarts|Comment" || true
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" get events -A --field-selector involvedObject.kind=Node \
  -o custom-columns=NODE:.involvedObject.name,REASON:.reason,MESSAGE:.message

say "When a Slurm job ends, its node goes to the requeued job (held by onequeue until then; never the reserved node)"
if [ -n "$requeued" ]; then
  for _ in $(seq 120); do
    [ "$(env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/squeue" -h -j "$requeued" -o %T 2>/dev/null)" = RUNNING ] && break
    sleep 0.5
  done
  S squeue -p batch -o "%.6i %.9P %.8T %.10M %.8N %k"
fi

say "Slurm's jobs are cancelled; the pool returns to Kubernetes for the pod story"
k -n research delete pod jupyter-slurm --grace-period=0 --force >/dev/null 2>&1 || true
env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/scancel" -u "$SLURM_USER" >/dev/null 2>&1 || true

say "A batch queue: a Deployment of 4 batch pods (4 CPUs each) fills the pool"
cat <<YAML | k apply -f - >/dev/null
apiVersion: apps/v1
kind: Deployment
metadata: {name: batch, namespace: research}
spec:
  replicas: 4
  selector: {matchLabels: {app: batch}}
  template:
    metadata:
      labels: {app: batch}
      annotations: {onequeue.io/qos: batch, onequeue.io/time-limit: "4h"}
    spec:
      schedulerName: onequeue
      terminationGracePeriodSeconds: 5  # the preempted pod leaves in seconds, not the default 30
      tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
      containers: [{name: main, image: busybox, resources: {requests: {cpu: "4", memory: 1Gi}}}]
YAML
for _ in $(seq 60); do
  [ "$(k -n research get pods -l app=batch --field-selector=status.phase=Running -o name | wc -l)" -ge 4 ] && break
  sleep 0.5
done
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" -n research get pods -o wide

say "A researcher's Jupyter pod (QOS interactive) must start now: onequeue preempts one batch pod"
pod jupyter interactive 2 | k apply -f - >/dev/null
# Up to 90 s: kwok deletes the evicted pod and starts the bound one only when its watches catch up
# (docs/e2e.md "Known problem of the local cluster").
for _ in $(seq 180); do
  [ "$(k -n research get pod jupyter -o jsonpath='{.status.phase}')" = Running ] && break
  sleep 0.5
done
sleep 2
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" -n research get pods -o wide
echo "(the ReplicaSet recreated the evicted batch pod; it waits, it does not win the node back)"

say "A gang of 3 pods that asked for 4 (onequeue.io/group-size: 4) and a pod with a bad annotation"
for i in 0 1 2; do pod "train-$i" batch 1 ', onequeue.io/group: train, onequeue.io/group-size: "4"'; done | k apply -f - >/dev/null
pod typo platinum 1 | k apply -f - >/dev/null   # a QOS the configuration does not define
sleep 3
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" -n research get pods \
  -o custom-columns=NAME:.metadata.name,STATUS:.status.phase,NODE:.spec.nodeName,POSITION:.metadata.annotations.onequeue\\.io/queue-position,ESTIMATED-START:.metadata.annotations.onequeue\\.io/estimated-start

say "Why does a pod wait? kubectl describe pod"
pending=$(k -n research get pods -l app=batch --field-selector=status.phase=Pending -o name | head -1)
[ -n "$pending" ] && run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" -n research describe "$pending" | sed -n '/^Annotations/,/^Status/p;/^Events/,$p'
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" -n research describe pod typo | sed -n '/^Events/,$p'
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" -n research describe pod jupyter | sed -n '/^Events/,$p'

say "Slurm's side of the pool, read over slurmrestd with a JWT"
# The token is a credential: shown as <JWT>, never printed.
printf '$ curl -H "X-SLURM-USER-NAME: %s" -H "X-SLURM-USER-TOKEN: <JWT>" %s\n' "$SLURM_USER" "$SLURMRESTD_URL/slurm/v0.0.38/nodes"
curl -s -H "X-SLURM-USER-NAME: $SLURM_USER" -H "X-SLURM-USER-TOKEN: $(cat "$SLURM_JWT_FILE")" \
  "$SLURMRESTD_URL/slurm/v0.0.38/nodes" -o "$demo/nodes.json"
python3 -c "import json,sys; [print(n['name'], n['state'], n['cpus'], 'cpus') for n in json.load(open('$demo/nodes.json'))['nodes']]"

say "The Helm chart an admin installs"
if [ -x "$ONEQUEUE_UPSTREAM_BIN/helm" ]; then
  run "$ONEQUEUE_UPSTREAM_BIN/helm" lint "$root/deploy/helm/onequeue"
fi
say "Scheduler log (last lines)"
tail -n 8 "$demo/scheduler.log"
