#!/usr/bin/env bash
# make demo: the StackHPC story on a local Kubernetes control plane (kube-apiserver, etcd,
# kube-controller-manager, kwok) and a local Slurm ($ONEQUEUE_SLURM: 22.05, 24.11 or 26.05; make demo
# SLURM=...) (munge, slurmctld, 5 slurmd with 4 GPUs
# each, slurmrestd with JWT); onequeue-scheduler runs against both under its own least-privilege
# identity. What users see: a shared node (issue 25, docs/sharing.md) where a 2-GPU Slurm job and a
# 2-GPU pod run side by side (squeue shows the pod's placeholder at its size; kubectl describe node
# and `oq nodes` the node's split); a GPU pool busy with Slurm batch work onequeue lent it; a researcher's
# Jupyter pod (QOS interactive, 4 GPUs) starts in seconds on a node taken back from Slurm, the job
# there requeued once and never evicted again (no preemption loop); kubectl get/describe, squeue,
# `oq queue`, `oq nodes`; the node returned to Slurm when the notebook ends; then a gang that waits
# whole, a pod with a bad annotation and `oq explain`. Stops everything it started.
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
bash "$root/test/cluster/up.sh" "$demo/k8s" --controller-manager --kwok-graceful >"$demo/k8s-up.log" 2>&1 \
  || { cat "$demo/k8s-up.log"; exit 1; }
# shellcheck disable=SC1091
source "$demo/k8s/env"
k() { "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" "$@"; }
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" version

say "Starting a local Slurm ${ONEQUEUE_SLURM:-22.05} (munge, slurmctld, 5 slurmd with 4 GPUs each, slurmrestd with JWT)"
bash "$root/test/cluster/slurm-up.sh" "$demo/slurm" --nodes 5 --gpus 4 >"$demo/slurm-up.log" 2>&1 \
  || { cat "$demo/slurm-up.log"; exit 1; }
# shellcheck disable=SC1091
source "$demo/slurm/slurm.env"
# n1-n4 stay in partition batch; n5 alone makes partition shared (sharing: shared below).
env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/scontrol" update PartitionName=batch Nodes=n[1-4]
env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/scontrol" create PartitionName=shared Nodes=n5 PriorityTier=1 \
  MaxTime=INFINITE State=UP
run env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/sinfo"

say "A GPU pool of 5 nodes (8 CPUs, 4 GPUs each), labelled onequeue.io/pool=demo, each the Kubernetes face of Slurm node nK; kwok plays their kubelets"
for i in 1 2 3 4 5; do
  cat <<YAML
apiVersion: v1
kind: Node
metadata:
  name: gpu-$i
  labels: {onequeue.io/pool: demo, onequeue.io/slurm-node: n$i, kubernetes.io/hostname: gpu-$i, type: kwok}
  annotations: {kwok.x-k8s.io/node: fake}
spec:
  taints: [{key: kwok.x-k8s.io/node, value: fake, effect: NoSchedule}]
status:
  allocatable: {cpu: "8", memory: 16Gi, pods: "110", nvidia.com/gpu: "4"}
  capacity: {cpu: "8", memory: 16Gi, pods: "110", nvidia.com/gpu: "4"}
---
YAML
done | k apply -f - >/dev/null
k wait --for=condition=Ready node --all --timeout=60s >/dev/null
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" get nodes -o custom-columns='NAME:.metadata.name,POOL:.metadata.labels.onequeue\.io/pool,GPUS:.status.allocatable.nvidia\.com/gpu'

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
  apiVersion: $SLURMRESTD_API
  lendMechanism: drain
  sharedPartitions: [batch, shared]
  partitions: {shared: {sharing: shared}}
  nodeLabel: onequeue.io/slurm-node
  lendAfterSeconds: 3
  returnAfterSeconds: 8
  pollIntervalSeconds: 1
  defaultQos: batch
  scontrolPath: "$SLURM_BIN/scontrol"
  slurmConf: "$SLURM_CONF"
server: {grpcAddress: "127.0.0.1:0", metricsAddress: "127.0.0.1:0"}
leaderElection: {enabled: false}
YAML
say "onequeue-scheduler, under its own RBAC identity ($ONEQUEUE_SCHEDULER_USER)"
run "$build/src/scheduler/onequeue-scheduler" --check-config --config "$demo/onequeue.yaml"
"$build/src/scheduler/onequeue-scheduler" --config "$demo/onequeue.yaml" >"$demo/scheduler.log" 2>&1 &
sched_pid=$!
grpc_port=""
for _ in $(seq 50); do
  grpc_port=$(grep -o 'QueueService on port [0-9]*' "$demo/scheduler.log" | head -1 | awk '{print $4}' || true)
  [ -n "$grpc_port" ] && break
  sleep 0.2
done
oq() { run "$build/src/scheduler/oq" --server "127.0.0.1:$grpc_port" "$@"; }
[ -n "$grpc_port" ] && oq version

pod() { # name qos cpu [extra annotations yaml] [gpus]
  local resources="requests: {cpu: \"$3\", memory: 1Gi}"
  [ -n "${5:-}" ] && resources="requests: {cpu: \"$3\", memory: 1Gi, nvidia.com/gpu: \"$5\"}, limits: {nvidia.com/gpu: \"$5\"}"
  cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: research
  labels: {app: $1}
  annotations: {onequeue.io/qos: "$2", onequeue.io/time-limit: "2h"${4:-}}
spec:
  schedulerName: onequeue
  tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
  containers: [{name: main, image: busybox, resources: {$resources}}]
---
YAML
}
k create namespace research >/dev/null
S() { run env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/$@"; }
# A command as the Slurm user: on 22.05 runuser; in a root filesystem (24.11, 26.05) the wrappers in
# $SLURM_BIN switch user inside it (ONEQUEUE_SLURM_RUN_AS).
as_slurm_user() {
  if [ -n "${SLURM_ROOT:-}" ]; then ONEQUEUE_SLURM_RUN_AS="$SLURM_USER" "$@"; else runuser -u "$SLURM_USER" -- "$@"; fi
}
owners() { run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" get nodes -l onequeue.io/pool=demo -L onequeue.io/owner,onequeue.io/slurm-node; }
for _ in $(seq 60); do
  [ "$(k get nodes -l onequeue.io/owner=kubernetes -o name | wc -l)" -ge 4 ] && break
  sleep 0.5
done
say "An idle pool: onequeue owns gpu-1..4 for Kubernetes and fences them on the Slurm side (drain tagged onequeue:kubernetes); gpu-5, in the shared partition, gets no owner mark and no fence"
owners
S sinfo -N -o "%N %P %T %G %E"

say "A shared node: gpu-5 (Slurm n5, partition shared, sharing: shared) runs a 2-GPU Slurm job and a 2-GPU pod side by side"
as_slurm_user env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/sbatch" -p shared -N1 -c2 --mem=2048 --gres=gpu:2 -t 10 \
  -J train-2gpu -o /dev/null -D "$SLURM_JOBS_DIR" --wrap="sleep 600" >/dev/null
for _ in $(seq 60); do
  [ "$(env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/squeue" -h -t R -p shared | wc -l)" -ge 1 ] && break
  sleep 0.25
done
echo "(onequeue mirrors the pod in Slurm by a placeholder job of its size, then binds it beside the job)"
pod notebook-2gpu interactive 2 "" 2 | k apply -f - >/dev/null
split=""
for _ in $(seq 80); do
  split=$(k get node gpu-5 -o jsonpath='{.metadata.annotations.onequeue\.io/split}')
  [[ "$split" == *notebook-2gpu* && "$split" == *slurm/* ]] \
    && [ "$(k -n research get pod notebook-2gpu -o jsonpath='{.status.phase}')" = Running ] && break
  sleep 0.25
done
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" -n research get pod notebook-2gpu -o wide
S squeue -p shared -o "%.6i %.9P %.8T %.8N %.5C %.13b %j"
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" describe node gpu-5 | sed -n '/^Annotations:/,/^CreationTimestamp:/p' \
  | grep -v '^CreationTimestamp:'
echo "(kubectl describe cuts a long annotation; oq nodes prints the whole split)"
oq nodes

say "Slurm users submit 6 GPU batch jobs (4 GPUs each): onequeue orders them with the pods and lends every idle node"
for i in 1 2 3 4 5 6; do
  as_slurm_user env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/sbatch" -p batch -N1 -c8 --gres=gpu:4 -t 10 \
    --requeue -o /dev/null -D "$SLURM_JOBS_DIR" --wrap="sleep $((15 + 2 * i))" >/dev/null
done
for _ in $(seq 120); do
  [ "$(env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/squeue" -h -t R -p batch | wc -l)" -ge 4 ] && break
  sleep 0.5
done
S squeue -p batch -o "%.6i %.9P %.8T %.10M %.8N %.12b %k"
owners
oq queue
oq nodes

say "A researcher opens a Jupyter notebook (QOS interactive, all 4 GPUs of a node): it must start now"
echo "(onequeue reserves a node on both sides, requeues the Slurm job there once, binds the pod)"
created=$(date +%s%N)
pod jupyter interactive 2 "" 4 | k apply -f - >/dev/null
for _ in $(seq 240); do
  [ "$(k -n research get pod jupyter -o jsonpath='{.status.phase}')" = Running ] && break
  sleep 0.25
done
echo "jupyter Running $(( ($(date +%s%N) - created) / 1000000 )) ms after it was created"
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" -n research get pods -o wide
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" -n research describe pod jupyter | sed -n '/^Node:/p;/^Events/,$p'
owners
requeued=""
for id in $(env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/squeue" -h -t PD -p batch -o "%i"); do
  if env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/scontrol" show job "$id" | grep -q 'Restarts=1'; then requeued=$id; break; fi
done
S squeue -p batch -o "%.6i %.9P %.8T %.10r %.8N %k"
[ -n "$requeued" ] && S scontrol show job "$requeued" | grep -E "JobState|Restarts|Comment" || true
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" get events -A --field-selector involvedObject.kind=Node \
  -o custom-columns=NODE:.involvedObject.name,REASON:.reason,MESSAGE:.message
oq queue
oq nodes

say "No loop: the Slurm job was requeued once; nothing took the node back while the notebook runs"
sleep 3
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" -n research get pod jupyter -o wide
[ -n "$requeued" ] && S scontrol show job "$requeued" | grep -o "Restarts=[0-9]*" || true

say "The notebook ends: its node goes back to Slurm (lendAfterSeconds 3); the batch queue drains into every node, the requeued job included"
k -n research delete pod jupyter --grace-period=0 --force >/dev/null 2>&1 || true
if [ -n "$requeued" ]; then
  for _ in $(seq 240); do
    [ "$(env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/squeue" -h -j "$requeued" -o %T 2>/dev/null)" = RUNNING ] && break
    sleep 0.25
  done
fi
S squeue -p batch -o "%.6i %.9P %.8T %.10M %.8N %k"
owners
oq nodes

say "Slurm's jobs are cancelled; the pool returns to Kubernetes for the pod story"
env SLURM_CONF="$SLURM_CONF" "$SLURM_BIN/scancel" -u "$SLURM_USER" >/dev/null 2>&1 || true
for _ in $(seq 120); do
  [ "$(k get nodes -l onequeue.io/owner=kubernetes -o name | wc -l)" -ge 4 ] && break
  sleep 0.5
done

say "A gang of 3 pods that asked for 4 (onequeue.io/group-size: 4) and a pod with a bad annotation"
for i in 0 1 2; do pod "train-$i" batch 1 ', onequeue.io/group: train, onequeue.io/group-size: "4"'; done | k apply -f - >/dev/null
pod typo platinum 1 | k apply -f - >/dev/null   # a QOS the configuration does not define
sleep 3
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" -n research get pods \
  -o custom-columns=NAME:.metadata.name,STATUS:.status.phase,NODE:.spec.nodeName,POSITION:.metadata.annotations.onequeue\\.io/queue-position,ESTIMATED-START:.metadata.annotations.onequeue\\.io/estimated-start

say "Why does a pod wait? kubectl describe pod, and oq explain"
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" -n research describe pod train-0 | sed -n '/^Events/,$p'
run "$KUBECTL" --kubeconfig "$ONEQUEUE_KUBECONFIG" -n research describe pod typo | sed -n '/^Events/,$p'
oq explain research/group/train
oq queue

say "The Helm chart an admin installs"
if [ -x "$ONEQUEUE_UPSTREAM_BIN/helm" ]; then
  run "$ONEQUEUE_UPSTREAM_BIN/helm" lint "$root/deploy/helm/onequeue"
fi
say "Scheduler log (last lines)"
tail -n 8 "$demo/scheduler.log"
