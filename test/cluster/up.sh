#!/usr/bin/env bash
# Starts a local Kubernetes control plane on loopback, without containers:
#   test/cluster/up.sh DIR [--controller-manager] [--kwok] [--kwok-graceful] [--scheduler] [--bench]
#                          [--apiserver-arg=--FLAG=VALUE]...
# etcd and kube-apiserver always; --controller-manager: kube-controller-manager; --kwok: kwok (fake
# kubelets: nodes turn Ready, bound pods Running; a deleted pod goes at once); --kwok-graceful: kwok
# whose deleted pods keep their node for their grace period, as with a kubelet; --scheduler: kube-scheduler as a peer scheduler;
# --bench: lifts the apiserver's request limits (no max-inflight, no priority and fairness), as
# kwokctl and scheduler_perf do, for benchmarks only; --apiserver-arg=X (repeatable): X appended to
# kube-apiserver's flags (e.g. --apiserver-arg=--goaway-chance=0.02 for a test of a client's GOAWAY
# handling); it must be a flag (start with --).
# Every port is a free loopback port chosen at start, so several clusters can run at once.
# Writes DIR/env, DIR/kubeconfig (admin), DIR/scheduler.kubeconfig, DIR/nobody.kubeconfig,
# DIR/pki, DIR/args, DIR/pids, DIR/logs (see docs/local-cluster.md). Returns when /readyz is ok and
# every requested component is healthy; on failure it stops what it started and exits non-zero.
# If ONEQUEUE_CLUSTER_OWNER_PID is set, a watchdog runs down.sh DIR once that process is gone (a
# test binary killed with SIGKILL leaves nothing behind).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

usage() { echo "usage: $0 DIR [--controller-manager] [--kwok] [--kwok-graceful] [--scheduler] [--bench] [--apiserver-arg=--FLAG=VALUE]..." >&2; exit 2; }
[ $# -ge 1 ] || usage
DIR=$1
shift
want_kcm=false want_kwok=false want_sched=false bench=false kwok_graceful=false
apiserver_args=()
for a in "$@"; do
  case $a in
    --controller-manager) want_kcm=true ;;
    --kwok) want_kwok=true ;;
    --kwok-graceful) want_kwok=true kwok_graceful=true ;;
    --scheduler) want_sched=true ;;
    --bench) bench=true ;;
    --apiserver-arg=--*) apiserver_args+=("${a#--apiserver-arg=}") ;;
    *) usage ;;
  esac
done
case $DIR in *[[:space:]]*) oq_die "DIR must not contain whitespace: '$DIR'" ;; esac
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
for f in "$DIR"/pids/*.pid; do
  [ -e "$f" ] || continue
  n=$(basename "$f" .pid)
  if oq_alive "$DIR" "$n"; then oq_die "$n already runs from $DIR: run test/cluster/down.sh $DIR first"; fi
done
rm -rf "$DIR/pids" "$DIR/args" "$DIR/etcd" "$DIR/env"
mkdir -p "$DIR/pids" "$DIR/logs" "$DIR/pki"
started_at=$(date +%s.%N)

# On any failure, stop whatever this run started, so a failed up.sh leaves nothing running.
on_exit() {
  local rc=$?
  if [ $rc -ne 0 ]; then
    oq_log "up.sh failed (exit $rc); stopping what it started"
    bash "$here/down.sh" "$DIR" >&2 || true
  fi
}
trap on_exit EXIT

# ONEQUEUE_UPSTREAM_BIN overrides the cached build (e.g. binaries built elsewhere).
if [ -n "${ONEQUEUE_UPSTREAM_BIN:-}" ]; then
  bin=$ONEQUEUE_UPSTREAM_BIN
else
  bin=$(bash "$here/build-upstream.sh" | tail -n 1)
fi
for b in kube-apiserver kubectl; do [ -x "$bin/$b" ] || oq_die "missing $bin/$b (see build-upstream.sh)"; done
# etcd: the one build-upstream.sh built (ETCD_VERSION); Debian's (3.4) only when the binaries
# come from elsewhere without it.
if [ -x "$bin/etcd" ]; then
  ETCD=$bin/etcd
else
  command -v etcd >/dev/null || oq_die "etcd is not installed (Debian package etcd-server)"
  ETCD=$(command -v etcd)
fi

# --- Certificates: our own CA; one serving certificate for 127.0.0.1/localhost used by every
# loopback server (apiserver, controller-manager, scheduler), so clients verify TLS against ca.crt.
pki=$DIR/pki
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=onequeue-local-ca" \
  -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
  -keyout "$pki/serving.key" -out "$pki/serving.csr" 2>/dev/null
printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "extendedKeyUsage=serverAuth" \
  "keyUsage=critical,digitalSignature,keyEncipherment" > "$pki/serving.ext"
openssl x509 -req -in "$pki/serving.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
  -days 30 -extfile "$pki/serving.ext" -out "$pki/serving.crt" 2>/dev/null
openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
chmod 600 "$pki"/*.key

# --- Identities: static bearer tokens (tokens.csv: token,user,uid,"groups").
new_token() { openssl rand -hex 24; }
admin_token=$(new_token) sched_token=$(new_token) nobody_token=$(new_token)
kcm_token=$(new_token) kube_sched_token=$(new_token) kwok_token=$(new_token)
sa_user=system:serviceaccount:onequeue-system:onequeue
{
  echo "$admin_token,onequeue-admin,onequeue-admin,\"system:masters\""
  echo "$sched_token,$sa_user,onequeue-scheduler,\"system:serviceaccounts,system:serviceaccounts:onequeue-system\""
  echo "$nobody_token,onequeue-nobody,onequeue-nobody"
  echo "$kcm_token,system:kube-controller-manager,system:kube-controller-manager"
  echo "$kube_sched_token,system:kube-scheduler,system:kube-scheduler"
  # kwok stands in for every kubelet; it is not what is under test, so it gets full rights.
  echo "$kwok_token,onequeue-kwok,onequeue-kwok,\"system:masters\""
} > "$pki/tokens.csv"
chmod 600 "$pki/tokens.csv"

# write_kubeconfig FILE USER TOKEN: a kubeconfig carrying the CA (never skipping verification).
ca_data=$(base64 -w0 < "$pki/ca.crt")
write_kubeconfig() {
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: onequeue-local
  cluster:
    server: https://127.0.0.1:$apiserver_port
    certificate-authority-data: $ca_data
users:
- name: $2
  user:
    token: $3
contexts:
- name: $2@onequeue-local
  context:
    cluster: onequeue-local
    user: $2
current-context: $2@onequeue-local
EOF
  chmod 600 "$1"
}

# start_with_retry NAME CHOOSE READY SECONDS: CHOOSE picks ports and writes NAME's args; READY polls
# health. A start that lost its port to another process is retried with new ports.
start_with_retry() {
  local name=$1 choose=$2 ready=$3 seconds=$4 attempt rc
  for attempt in 1 2 3 4 5; do
    "$choose"
    oq_start "$DIR" "$name"
    rc=0
    oq_wait_for "$DIR" "$name" "$seconds" "$ready" || rc=$?
    if [ $rc -eq 0 ]; then
      oq_log "$name ready (pid $(oq_pid "$DIR" "$name"))"
      return 0
    fi
    if oq_bind_conflict "$DIR" "$name"; then
      oq_log "$name: port taken by another process, choosing another (attempt $attempt)"
      oq_stop "$DIR" "$name" 5
      continue
    fi
    [ $rc -eq 1 ] && oq_log "$name exited during start" || oq_log "$name not ready after ${seconds}s"
    oq_tail_log "$DIR" "$name"
    exit 1
  done
  oq_die "$name: no free port after 5 attempts"
}

# --- etcd.
choose_etcd() {
  etcd_port=$(oq_free_port)
  etcd_peer_port=$(oq_free_port)
  rm -rf "$DIR/etcd"
  oq_write_args "$DIR" etcd "$ETCD" --name=onequeue --data-dir="$DIR/etcd" \
    --listen-client-urls="http://127.0.0.1:$etcd_port" --advertise-client-urls="http://127.0.0.1:$etcd_port" \
    --listen-peer-urls="http://127.0.0.1:$etcd_peer_port" \
    --initial-advertise-peer-urls="http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster="onequeue=http://127.0.0.1:$etcd_peer_port" \
    --logger=zap --log-outputs=stderr
}
etcd_ready() {
  oq_listens "$DIR" etcd "$etcd_port" &&
    curl -sS --max-time 3 "http://127.0.0.1:$etcd_port/health" | grep -q '"health":"true"'
}
start_with_retry etcd choose_etcd etcd_ready 30
etcd_url=http://127.0.0.1:$etcd_port

# --- kube-apiserver.
# The audit policy (used unless --bench): every write of the scheduler's identity, nothing else.
cat > "$DIR/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: ["$sa_user"]
  verbs: [create, update, patch, delete, deletecollection]
- level: None
EOF
choose_apiserver() {
  apiserver_port=$(oq_free_port)
  local -a extra=()
  if ! $want_kcm; then
    # No controller-manager: no default ServiceAccount is ever created and the not-ready taint is
    # never lifted, so these admission plugins would refuse or strand every pod.
    extra+=(--disable-admission-plugins=ServiceAccount,TaintNodesByCondition)
  fi
  if $bench; then
    extra+=(--max-requests-inflight=0 --max-mutating-requests-inflight=0 --enable-priority-and-fairness=false)
  else
    # Audit: the scheduler's writes only (DIR/logs/audit.log, one JSON event per request at
    # Metadata level: verb, object, user agent, times, answer), so that a test can prove which
    # replica wrote what and when (leader_fault_e2e_test). A few hundred lines per test; off for
    # benchmarks.
    extra+=(--audit-policy-file="$DIR/audit-policy.yaml" --audit-log-path="$DIR/logs/audit.log"
      --audit-log-format=json --audit-log-mode=blocking)
  fi
  # --endpoint-reconciler-type=none: the "kubernetes" Service cannot point at a loopback address
  # (the reconciler would log a validation error every 10 s); nothing here runs in a pod.
  oq_write_args "$DIR" kube-apiserver "$bin/kube-apiserver" \
    --etcd-servers="$etcd_url" --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
    --secure-port="$apiserver_port" --cert-dir="$pki/apiserver" \
    --tls-cert-file="$pki/serving.crt" --tls-private-key-file="$pki/serving.key" \
    --client-ca-file="$pki/ca.crt" \
    --requestheader-client-ca-file="$pki/ca.crt" --requestheader-allowed-names=onequeue-front-proxy \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$pki/sa.key" --service-account-signing-key-file="$pki/sa.key" \
    --token-auth-file="$pki/tokens.csv" --authorization-mode=Node,RBAC \
    --service-cluster-ip-range=10.0.0.0/24 \
    --endpoint-reconciler-type=none "${extra[@]}" ${apiserver_args[@]+"${apiserver_args[@]}"}
}
apiserver_ready() {
  oq_https_ok "$pki/ca.crt" "https://127.0.0.1:$apiserver_port/readyz" "$admin_token"
}
start_with_retry kube-apiserver choose_apiserver apiserver_ready 120
server=https://127.0.0.1:$apiserver_port

write_kubeconfig "$DIR/kubeconfig" onequeue-admin "$admin_token"
write_kubeconfig "$DIR/scheduler.kubeconfig" onequeue-scheduler "$sched_token"
write_kubeconfig "$DIR/nobody.kubeconfig" onequeue-nobody "$nobody_token"
write_kubeconfig "$DIR/controller-manager.kubeconfig" system:kube-controller-manager "$kcm_token"
write_kubeconfig "$DIR/kube-scheduler.kubeconfig" system:kube-scheduler "$kube_sched_token"
write_kubeconfig "$DIR/kwok.kubeconfig" onequeue-kwok "$kwok_token"

kubectl() { "$bin/kubectl" --kubeconfig="$DIR/kubeconfig" "$@"; }
# The RBAC bootstrap roles are written by a post-start hook that /readyz already waited for.
kubectl apply -f "$here/scheduler-rbac.yaml" >> "$DIR/logs/kubectl.log" 2>&1 ||
  { tail -n 20 "$DIR/logs/kubectl.log" >&2; oq_die "applying scheduler-rbac.yaml failed"; }

# --- Optional components. Each serves its health endpoints on a free loopback port with the same
# serving certificate, so readiness is checked over verified TLS.
if $want_kcm; then
  choose_kcm() {
    kcm_port=$(oq_free_port)
    oq_write_args "$DIR" kube-controller-manager "$bin/kube-controller-manager" \
      --kubeconfig="$DIR/controller-manager.kubeconfig" \
      --authentication-kubeconfig="$DIR/controller-manager.kubeconfig" \
      --authorization-kubeconfig="$DIR/controller-manager.kubeconfig" \
      --bind-address=127.0.0.1 --secure-port="$kcm_port" \
      --tls-cert-file="$pki/serving.crt" --tls-private-key-file="$pki/serving.key" \
      --leader-elect=false --use-service-account-credentials=true \
      --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
      --cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key" \
      --node-monitor-grace-period=10m
  }
  # --node-monitor-grace-period: kwok v0.7.0 here posts a node's status only when something about
  # the node changes (its watches keep ending, docs/e2e.md), so with the default 50 s every kwok
  # node of a quiet cluster turned NotReady a minute after it was made (seen in make demo), and
  # back when that change woke kwok. A simulated kubelet never dies: a long grace costs nothing.
  kcm_ready() { oq_https_ok "$pki/ca.crt" "https://127.0.0.1:$kcm_port/healthz"; }
  start_with_retry kube-controller-manager choose_kcm kcm_ready 60
  # With the ServiceAccount admission plugin on, a pod is refused until its namespace's "default"
  # ServiceAccount exists: wait for the controllers to have created it in "default".
  default_sa() { kubectl get serviceaccount default -n default; }
  oq_wait_for "$DIR" kube-controller-manager 60 default_sa ||
    { oq_tail_log "$DIR" kube-controller-manager; oq_die "no default ServiceAccount after 60 s"; }
fi

if $want_sched; then
  choose_sched() {
    sched_port=$(oq_free_port)
    oq_write_args "$DIR" kube-scheduler "$bin/kube-scheduler" \
      --kubeconfig="$DIR/kube-scheduler.kubeconfig" \
      --authentication-kubeconfig="$DIR/kube-scheduler.kubeconfig" \
      --authorization-kubeconfig="$DIR/kube-scheduler.kubeconfig" \
      --bind-address=127.0.0.1 --secure-port="$sched_port" \
      --tls-cert-file="$pki/serving.crt" --tls-private-key-file="$pki/serving.key" \
      --leader-elect=false
  }
  sched_ready() { oq_https_ok "$pki/ca.crt" "https://127.0.0.1:$sched_port/healthz"; }
  start_with_retry kube-scheduler choose_sched sched_ready 60
fi

if $want_kwok; then
  [ -x "$bin/kwok" ] || oq_die "missing $bin/kwok"
  choose_kwok() {
    kwok_port=$(oq_free_port)
    oq_write_args "$DIR" kwok "$bin/kwok" --kubeconfig="$DIR/kwok.kubeconfig" \
      --manage-all-nodes=true --server-address="127.0.0.1:$kwok_port" \
      --node-ip=127.0.0.1 --cidr=10.64.0.1/10 \
      --config="$here/kwok/node-stages.yaml" \
      --config="$here/kwok/$($kwok_graceful && echo graceful || echo fast)-pod-stages.yaml"
  }
  kwok_ready() { oq_listens "$DIR" kwok "$kwok_port" && curl -sS --max-time 3 "http://127.0.0.1:$kwok_port/healthz" | grep -q ok; }
  # kwok's client-go streams lists over watches (WatchListClient); Debian's etcd 3.4 cannot answer
  # the progress requests that needs ("RequestWatchProgress is disabled"), so kwok's watches ended
  # every few seconds and it relisted, delaying Ready/Running by up to ~40 s under load. With the
  # etcd build-upstream.sh builds that is gone; plain list+watch stays for the Debian fallback
  # (client-go reads KUBE_FEATURE_<gate> from the environment).
  KUBE_FEATURE_WatchListClient=false start_with_retry kwok choose_kwok kwok_ready 60
fi

# --- DIR/env: everything a test or a person needs, shell-sourceable.
{
  echo "ONEQUEUE_K8S_SERVER=$server"
  echo "ONEQUEUE_K8S_CA=$pki/ca.crt"
  echo "ONEQUEUE_KUBECONFIG=$DIR/kubeconfig"
  echo "ONEQUEUE_SCHEDULER_KUBECONFIG=$DIR/scheduler.kubeconfig"
  echo "ONEQUEUE_NOBODY_KUBECONFIG=$DIR/nobody.kubeconfig"
  echo "ONEQUEUE_ADMIN_TOKEN=$admin_token"
  echo "ONEQUEUE_SCHEDULER_TOKEN=$sched_token"
  echo "ONEQUEUE_NOBODY_TOKEN=$nobody_token"
  echo "ONEQUEUE_SCHEDULER_USER=$sa_user"
  echo "ONEQUEUE_ETCD_URL=$etcd_url"
  echo "ONEQUEUE_UPSTREAM_BIN=$bin"
  echo "ONEQUEUE_K8S_VERSION=$("$bin/kube-apiserver" --version | awk '{print $2}')"
  echo "KUBECTL=$bin/kubectl"
} > "$DIR/env.tmp"
chmod 600 "$DIR/env.tmp"
mv "$DIR/env.tmp" "$DIR/env"

# --- Watchdog: once the owner process is gone (even by SIGKILL), stop the cluster.
if [ -n "${ONEQUEUE_CLUSTER_OWNER_PID:-}" ]; then
  owner=$ONEQUEUE_CLUSTER_OWNER_PID
  oq_write_args "$DIR" watchdog /bin/bash -c \
    "while kill -0 $owner 2>/dev/null; do sleep 1; done; exec bash '$here/down.sh' '$DIR'"
  oq_start "$DIR" watchdog
fi

elapsed=$(awk -v a="$started_at" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}')
oq_log "up in ${elapsed}s: $server (source $DIR/env)"
