#!/usr/bin/env bash
# Kills kube-apiserver (SIGKILL: a crash, not a graceful shutdown) and starts it again with exactly
# the same command line (DIR/args/kube-apiserver.args), hence the same port, then waits for /readyz:
#   test/cluster/restart-apiserver.sh DIR
# Clients see their connections drop and watches end; the new apiserver lists from etcd afresh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
DIR=$(cd "$1" && pwd)
[ -f "$DIR/env" ] && [ -f "$DIR/args/kube-apiserver.args" ] || oq_die "$DIR is not a cluster started by up.sh"
server=$(oq_env_get "$DIR" ONEQUEUE_K8S_SERVER)
ca=$(oq_env_get "$DIR" ONEQUEUE_K8S_CA)
token=$(oq_env_get "$DIR" ONEQUEUE_ADMIN_TOKEN)
port=${server##*:}

pid=$(oq_pid "$DIR" kube-apiserver)
if [ -n "$pid" ]; then
  kill -KILL "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
fi
rm -f "$DIR/pids/kube-apiserver.pid"
# The old listener is gone with its process; wait until the kernel agrees before binding again.
for _ in $(seq 1 100); do [ -z "$(ss -Hltn "sport = :$port")" ] && break; sleep 0.1; done

oq_start "$DIR" kube-apiserver
rc=0
oq_wait_for "$DIR" kube-apiserver 120 oq_https_ok "$ca" "$server/readyz" "$token" || rc=$?
if [ $rc -ne 0 ]; then
  oq_tail_log "$DIR" kube-apiserver
  oq_die "kube-apiserver did not come back on port $port"
fi
oq_listens "$DIR" kube-apiserver "$port" || oq_die "another process took port $port"
oq_log "kube-apiserver restarted (pid $(oq_pid "$DIR" kube-apiserver)) on $server"
