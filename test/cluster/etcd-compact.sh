#!/usr/bin/env bash
# Compacts the cluster's etcd at its current revision, so that resourceVersions older than now are
# gone from etcd (lists or watches that must reach etcd with them get 410 Gone):
#   test/cluster/etcd-compact.sh DIR
# Prints the revision it compacted at. Note: kube-apiserver's watch cache still serves recent
# history it holds in memory; restart-apiserver.sh after compacting empties that too.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
[ $# -eq 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
DIR=$(cd "$1" && pwd)
[ -f "$DIR/env" ] || oq_die "$DIR is not a cluster started by up.sh"
url=$(oq_env_get "$DIR" ONEQUEUE_ETCD_URL)
export ETCDCTL_API=3
rev=$(etcdctl --endpoints="$url" endpoint status --write-out=json |
  grep -o '"revision":[0-9]*' | head -n 1 | cut -d: -f2)
[ -n "$rev" ] || oq_die "could not read etcd's revision from $url"
etcdctl --endpoints="$url" compact "$rev" --physical >&2
echo "$rev"
