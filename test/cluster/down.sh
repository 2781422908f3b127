#!/usr/bin/env bash
# Stops exactly what test/cluster/up.sh DIR started, by the PIDs it recorded in DIR/pids:
#   test/cluster/down.sh DIR
# TERM, a bounded wait, then KILL. Idempotent: a second call, or a call on a half-started DIR, is
# fine. Exits non-zero if a recorded process is still alive afterwards. Keeps DIR (logs, certs).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
DIR=$1
[ -d "$DIR/pids" ] || exit 0

# The watchdog first, so it cannot start a second down.sh; unless this down.sh IS the watchdog.
if [ "$(cat "$DIR/pids/watchdog.pid" 2>/dev/null)" = "$$" ]; then
  rm -f "$DIR/pids/watchdog.pid"
else
  oq_stop "$DIR" watchdog 2 || true
fi
# Clients of the apiserver before it, etcd last, so that nothing logs errors about a missing server.
for name in kwok kube-scheduler kube-controller-manager kube-apiserver etcd; do
  oq_stop "$DIR" "$name" 15 || true
done
# Anything else recorded (a component added later) goes too.
for f in "$DIR"/pids/*.pid; do
  [ -e "$f" ] || continue
  oq_stop "$DIR" "$(basename "$f" .pid)" 10 || true
done

left=$(ls "$DIR/pids" 2>/dev/null | tr '\n' ' ')
if [ -n "$left" ]; then
  oq_log "could not stop: $left"
  exit 1
fi
exit 0
