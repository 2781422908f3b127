#!/usr/bin/env bash
# Starts a private Slurm cluster under DIR, on free loopback ports:
#   munged (own key and socket), slurmctld, N x `slurmd -N nK`, slurmrestd (JWT, TCP + unix socket).
# Usage: test/cluster/slurm-up.sh DIR [--nodes N] [--gpus G] [--owner-pid PID] [--token-lifespan SECONDS] [--slurm PREFIX]
#        [--requeue-delay SECONDS]
#   Which Slurm: ONEQUEUE_SLURM=22.05 (default: Debian bookworm's packages under /usr), 24.11 or
#   26.05 (Debian trixie's / forky's, in a root filesystem that test/cluster/slurm-rootfs.sh builds
#   once and caches; the daemons run under chroot in a private mount namespace, and DIR/bin holds
#   wrappers that run the client commands there).
#   --gpus G: GPUs per node (Gres=gpu:G, default 2), each a character device under DIR/dev.
#   --owner-pid PID: a watchdog runs slurm-down.sh DIR when PID exits, even by SIGKILL
#   (default: $ONEQUEUE_CLUSTER_OWNER_PID, as for test/cluster/up.sh).
#   --slurm PREFIX: the Slurm installation to run (PREFIX/sbin/slurmctld, PREFIX/bin/scontrol, its
#   slurmrestd plugins); default $ONEQUEUE_SLURM_PREFIX, else /usr (Debian's Slurm 22.05).
#   --requeue-delay SECONDS: how long a job Slurm requeued waits before it may start again
#   (AuthInfo cred_expire, 5..120; default Slurm's own, 120 s).
# Returns when every node is idle and slurmrestd answers /slurm/vX/diag with the token (vX: the
# highest REST version of v0.0.38..v0.0.45 the installation serves).
# Writes DIR/slurm.env (shell-sourceable). Needs root (mknod, daemons under their own users).
# Stop with test/cluster/slurm-down.sh DIR. See docs/local-slurm.md.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=slurm/lib.sh
source "$HERE/slurm/lib.sh"

usage() { sed -n '2,20p' "${BASH_SOURCE[0]}" >&2; exit 2; }

[ $# -ge 1 ] || usage
case "$1" in -h | --help | -*) usage ;; esac
DIR_ARG="$1"
shift
NODES=8
GPUS=2
# The Kubernetes scripts take the owner from this variable; --owner-pid wins.
OWNER_PID="${ONEQUEUE_CLUSTER_OWNER_PID:-}"
TOKEN_LIFESPAN=$((30 * 24 * 3600))
SLURM_PREFIX="${ONEQUEUE_SLURM_PREFIX:-/usr}"
SLURM_VERSION="${ONEQUEUE_SLURM:-22.05}"
SLURM_ROOT=""
REQUEUE_DELAY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --slurm) SLURM_PREFIX="${2:?--slurm needs the prefix of a Slurm installation}"; shift 2 ;;
    --nodes) NODES="${2:?--nodes needs a number}"; shift 2 ;;
    --gpus) GPUS="${2:?--gpus needs a number}"; shift 2 ;;
    --owner-pid) OWNER_PID="${2:?--owner-pid needs a PID}"; shift 2 ;;
    --token-lifespan) TOKEN_LIFESPAN="${2:?--token-lifespan needs seconds}"; shift 2 ;;
    --requeue-delay) REQUEUE_DELAY="${2:?--requeue-delay needs seconds}"; shift 2 ;;
    -h | --help) usage ;;
    *) echo "slurm-up.sh: unknown argument: $1" >&2; usage ;;
  esac
done
[[ "$NODES" =~ ^[0-9]+$ ]] && [ "$NODES" -ge 1 ] && [ "$NODES" -le 1000 ] || die "--nodes must be 1..1000, got '$NODES'"
[[ "$GPUS" =~ ^[0-9]+$ ]] && [ "$GPUS" -ge 1 ] && [ "$GPUS" -le 16 ] || die "--gpus must be 1..16, got '$GPUS'"
[ -z "$REQUEUE_DELAY" ] || { [[ "$REQUEUE_DELAY" =~ ^[0-9]+$ ]] && [ "$REQUEUE_DELAY" -ge 5 ] && [ "$REQUEUE_DELAY" -le 120 ]; } ||
  die "--requeue-delay must be 5..120 seconds, got '$REQUEUE_DELAY'"
[ "$(id -u)" = 0 ] || die "slurm-up.sh must run as root (it makes device nodes with mknod and starts daemons as munge, slurm and nobody)"
case "$SLURM_VERSION" in
  22.05) ;;
  24.11 | 26.05)
    [ -z "${ONEQUEUE_SLURM_PREFIX:-}" ] || die "ONEQUEUE_SLURM=$SLURM_VERSION and ONEQUEUE_SLURM_PREFIX both set: choose one"
    for cmd in unshare nsenter chroot mount; do command -v "$cmd" >/dev/null || die "'$cmd' not found (util-linux, coreutils)"; done
    SLURM_ROOT="$("$HERE/slurm-rootfs.sh" "$SLURM_VERSION" | tail -1)" || die "test/cluster/slurm-rootfs.sh $SLURM_VERSION failed"
    case "$SLURM_ROOT" in *[[:space:]]*) die "$SLURM_ROOT contains whitespace" ;; esac
    SLURM_PREFIX="$SLURM_ROOT/usr" ;;
  *) die "ONEQUEUE_SLURM must be 22.05, 24.11 or 26.05, got '$SLURM_VERSION'" ;;
esac
for cmd in munged munge unmunge setpriv ss curl flock mknod; do
  command -v "$cmd" >/dev/null || [ -x "/usr/sbin/$cmd" ] || die "'$cmd' not found: run test/tools/install-deps.sh"
done
SLURM_PREFIX="$(cd "$SLURM_PREFIX" 2>/dev/null && pwd)" || die "--slurm / ONEQUEUE_SLURM_PREFIX: no such folder"
for cmd in sbin/slurmctld sbin/slurmd sbin/slurmrestd bin/scontrol bin/sinfo bin/squeue; do
  [ -x "$SLURM_PREFIX/$cmd" ] || die "$SLURM_PREFIX/$cmd not found: $SLURM_PREFIX is not a Slurm installation with slurmrestd (the default /usr needs test/tools/install-deps.sh)"
done
slurm_detect "$SLURM_PREFIX"
if [ -z "$SLURM_ROOT" ]; then
  getent passwd slurm >/dev/null && getent passwd munge >/dev/null || die "users slurm and munge must exist (packages slurmctld, munge)"
fi

mkdir -p "$DIR_ARG"
slurm_set_paths "$(cd "$DIR_ARG" && pwd)"
if [ -d "$SLURM_PIDS" ]; then
  for f in "$SLURM_PIDS"/*.pid; do
    [ -f "$f" ] || continue
    pid="$(cat "$f")"
    if pid_alive "$pid" && pid_is_ours "$pid"; then
      die "a cluster is already running in $SLURM_DIR ($(basename "$f" .pid), PID $pid): run test/cluster/slurm-down.sh $SLURM_DIR first"
    fi
  done
fi

# Unix socket paths are limited to 107 bytes; the longest is slurmstepd's
# DIR/spool/nK/nK_<job id>.<step id> (about 40 bytes after DIR).
[ ${#SLURM_DIR} -le 60 ] || die "$SLURM_DIR is too long (${#SLURM_DIR} > 60 characters) for the unix sockets under it; use a shorter folder such as /tmp/s1"
case "$SLURM_DIR" in *[[:space:]]*) die "$SLURM_DIR contains whitespace" ;; esac

# The daemons run as munge, slurm and nobody: every folder above DIR must let them through.
d="$SLURM_DIR"
while [ "$d" != / ]; do
  d="$(dirname "$d")"
  perms="$(stat -c %A "$d")"
  [ "${perms:9:1}" = x ] || [ "${perms:9:1}" = t ] ||
    die "$d is not searchable by other users ($perms): the daemons (users slurm, munge, nobody) cannot reach $SLURM_DIR; use a folder under /tmp"
done

started=0
interrupted=0
# The caller's stderr, for on_exit: a trap may run inside a call whose stderr goes to /dev/null.
exec 8>&2
on_exit() {
  local rc=$?
  [ "$interrupted" = 0 ] || rc=$interrupted
  if [ "$rc" != 0 ] && [ "$started" = 1 ]; then
    # A reader that went away (| head) must not stop us from stopping the cluster.
    trap '' PIPE
    {
      echo "slurm-up.sh: FAILED (exit $rc); log tails follow, then the cluster is stopped"
      show_log_tails
    } >&8 2>&8 || true
    "$HERE/slurm-down.sh" "$SLURM_DIR" >&8 2>&8 || true
  fi
  exit "$rc"
}
trap on_exit EXIT
# Interrupted (Ctrl-C, TERM): exit through on_exit, which stops what was started (the daemons run in
# sessions of their own and would not get the signal).
trap 'interrupted=130; exit 130' INT
trap 'interrupted=143; exit 143' TERM HUP
trap 'interrupted=141; exit 141' PIPE

T0=$(date +%s.%N)
rm -rf "$SLURM_DIR"/{state,spool,munge,rest,dev,bin,pids} "$SLURM_DIR/cgroup.conf"
mkdir -p "$SLURM_DIR"/{bin,pids,logs,state,spool,jobs,munge,rest,dev}
chmod 755 "$SLURM_DIR"

# Daemons under their own names: started as slurmd-wlm, slurmd silently drops its GPUs.
resolve_daemon() {
  local name="$1" sbin="$SLURM_PREFIX/sbin" target
  if [ -x "$sbin/$name-wlm" ]; then target="$sbin/$name-wlm"; else target="$(readlink -f "$sbin/$name")"; fi
  case "$target" in *emulator*) die "$sbin/$name points to the emulator build ($target): run update-alternatives --set $name $sbin/$name-wlm" ;; esac
  [ -x "$target" ] || die "no $name binary (looked at $target)"
  ln -sfn "$target" "$SLURM_BIN_DIR/$name"
}
if [ -n "$SLURM_ROOT" ]; then
  # The daemons start from the root filesystem's /usr/sbin (daemon_path); the client commands are
  # wrappers that enter the cluster's namespace and root.
  for c in scontrol squeue sinfo sbatch scancel srun salloc sacct sprio sstat sdiag; do
    if [ -x "$SLURM_ROOT/usr/bin/$c" ]; then root_wrapper "$c" "/usr/bin/$c"; fi
  done
  root_wrapper munge /usr/bin/munge
  root_wrapper unmunge /usr/bin/unmunge
else
  resolve_daemon slurmctld
  resolve_daemon slurmd
  ln -sfn "$SLURM_PREFIX/sbin/slurmrestd" "$SLURM_BIN_DIR/slurmrestd"
  for c in scontrol squeue sinfo sbatch scancel srun salloc sacct sprio sstat sdiag; do
    if [ -x "$SLURM_PREFIX/bin/$c" ]; then ln -sfn "$SLURM_PREFIX/bin/$c" "$SLURM_BIN_DIR/$c"; fi
  done
fi

# Keys: a private munge key and the JWT signing key, readable only by their daemon.
dd if=/dev/urandom of="$SLURM_DIR/munge/munge.key" bs=1024 count=1 status=none
chown_as munge "$SLURM_DIR/munge"
chmod 700 "$SLURM_DIR/munge"
chmod 755 "$SLURM_DIR/munge" # slurm's daemons and root connect to the socket inside
chmod 400 "$SLURM_DIR/munge/munge.key"
dd if=/dev/urandom of="$SLURM_DIR/state/jwt_hs256.key" bs=32 count=1 status=none
chmod 600 "$SLURM_DIR/state/jwt_hs256.key"

# GPUS fake GPUs (character devices; same numbers as /dev/null) shared by every node.
for ((g = 0; g < GPUS; g++)); do mknod "$SLURM_DIR/dev/gpu$g" c 1 3; done
chmod 666 "$SLURM_DIR"/dev/gpu*

# Ports: slurmctld, slurmrestd, then one per slurmd.
claim_ports $((NODES + 2))
started=1
CTLD_PORT=$PORT_BASE
REST_PORT=$((PORT_BASE + 1))
FIRST_SLURMD_PORT=$((PORT_BASE + 2))
CLUSTER_NAME="oq$CTLD_PORT"
NODE_LIST=()
for ((k = 1; k <= NODES; k++)); do NODE_LIST+=("n$k"); done
NODE_RANGE="n[1-$NODES]"
[ "$NODES" = 1 ] && NODE_RANGE=n1

# AuthInfo's cred_expire is also how long a requeued job waits (slurm.conf(5)); Slurm checks >= 5.
CRED_EXPIRE=""
[ -z "$REQUEUE_DELAY" ] || CRED_EXPIRE=",cred_expire=$REQUEUE_DELAY"
fill() {
  sed -e "s|@DIR@|$SLURM_DIR|g" -e "s|@CRED_EXPIRE@|$CRED_EXPIRE|g" -e "s|@CLUSTER_NAME@|$CLUSTER_NAME|g" -e "s|@CTLD_PORT@|$CTLD_PORT|g" \
    -e "s|@FIRST_SLURMD_PORT@|$FIRST_SLURMD_PORT|g" -e "s|@NODES@|$NODE_RANGE|g" \
    -e "s|@LAST_GPU@|$((GPUS - 1))|g" "$1"
}
{
  fill "$SLURM_TEMPLATES/slurm.conf.in"
  echo
  echo "# Nodes: 8 CPUs, 16000 MB, $GPUS GPUs each; racks of 4 nodes (features rack1, rack2, ...) for topology tests."
  for ((k = 1; k <= NODES; k++)); do
    echo "NodeName=n$k NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((FIRST_SLURMD_PORT + k - 1)) CPUs=8 Sockets=1 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=16000 Gres=gpu:$GPUS Features=fast,ib,rack$(((k - 1) / 4 + 1)) State=UNKNOWN"
  done
  echo
  echo "# batch: the shared partition. reclaim: same nodes, higher tier, never preempted: its jobs"
  echo "# (onequeue's placeholders) requeue batch jobs on their nodes."
  echo "PartitionName=batch Nodes=$NODE_RANGE Default=YES MaxTime=INFINITE State=UP PriorityTier=1 PriorityJobFactor=1"
  echo "PartitionName=reclaim Nodes=$NODE_RANGE Default=NO MaxTime=INFINITE State=UP PriorityTier=10 PriorityJobFactor=10 PreemptMode=OFF"
} >"$SLURM_CONF_FILE"
fill "$SLURM_TEMPLATES/gres.conf.in" >"$SLURM_DIR/gres.conf"
: >"$SLURM_DIR/plugstack.conf"
chmod 644 "$SLURM_CONF_FILE" "$SLURM_DIR/gres.conf" "$SLURM_DIR/plugstack.conf"
# From 23.02 slurmd refuses to start without a cgroup plugin it can load ("No filesystem mounted on
# /sys/fs/cgroup"); 22.05 needs no cgroup.conf (it rejects CgroupPlugin=disabled). 24.11 has no
# "disabled" (it looks for a plugin of that name): autodetect, without systemd. 25.05 and later:
# disabled (job processes are tracked by proctrack/linuxproc, nothing is constrained).
case "${SLURM_RELEASE%%.*}" in
  2[0-2]) ;;
  2[3-4]) printf 'CgroupPlugin=autodetect\nIgnoreSystemd=yes\n' >"$SLURM_DIR/cgroup.conf" ;;
  *) echo "CgroupPlugin=disabled" >"$SLURM_DIR/cgroup.conf" ;;
esac
[ ! -f "$SLURM_DIR/cgroup.conf" ] || chmod 644 "$SLURM_DIR/cgroup.conf"
cat >"$SLURM_PORTS_FILE" <<ENV
CTLD_PORT=$CTLD_PORT
REST_PORT=$REST_PORT
FIRST_SLURMD_PORT=$FIRST_SLURMD_PORT
CLUSTER_NAME=$CLUSTER_NAME
NODES="${NODE_LIST[*]}"
SLURM_PREFIX=$SLURM_PREFIX
SLURM_ROOT=$SLURM_ROOT
SLURM_VERSION=$SLURM_VERSION
SLURM_RELEASE=$SLURM_RELEASE
REST_PLUGINS=$REST_PLUGINS
REST_API=$REST_API
ENV

for ((k = 1; k <= NODES; k++)); do mkdir -p "$SLURM_DIR/spool/n$k"; done
chown_as slurm "$SLURM_DIR"/{state,spool,logs,jobs}
chown_as slurm "$SLURM_PIDS"
chown nobody:nogroup "$SLURM_DIR/rest"
ln -sfn rest/slurmrestd.socket "$SLURM_REST_SOCKET"

if [ -n "$SLURM_ROOT" ]; then
  log "Slurm $SLURM_RELEASE under chroot $SLURM_ROOT (private mount namespace); slurmrestd -s $REST_PLUGINS, checked on $REST_API"
  start_mount_namespace
else
  log "Slurm $SLURM_RELEASE from $SLURM_PREFIX; slurmrestd -s $REST_PLUGINS, checked on $REST_API"
fi
log "starting munged, slurmctld (port $CTLD_PORT), $NODES slurmd (ports $FIRST_SLURMD_PORT-$((FIRST_SLURMD_PORT + NODES - 1))) in $SLURM_DIR"
start_munged
start_slurmctld
for node in "${NODE_LIST[@]}"; do start_slurmd "$node"; done

all_nodes_idle() {
  local idle
  idle="$(sl sinfo -h -N -p batch -o '%N %T' | awk '$2 == "idle"' | wc -l)"
  [ "$idle" -eq "$NODES" ]
}
wait_until $((30 + NODES)) "all $NODES nodes idle (sinfo -N -p batch)" all_nodes_idle || {
  sl sinfo -N -p batch -o '%N %T %E' >&2 || true
  exit 1
}

# A token of SlurmUser (a Slurm admin) for slurmrestd's clients, readable by root only.
token="$(sl scontrol token username="$SLURM_USER" lifespan="$TOKEN_LIFESPAN")" || die "scontrol token failed: $token"
umask 077
echo "${token#SLURM_JWT=}" >"$SLURM_JWT_FILE.tmp"
mv "$SLURM_JWT_FILE.tmp" "$SLURM_JWT_FILE"
umask 022

log "starting slurmrestd on 127.0.0.1:$REST_PORT and $SLURM_REST_SOCKET"
start_slurmrestd

cat >"$SLURM_ENV_FILE.tmp" <<ENV
# Local Slurm cluster started by test/cluster/slurm-up.sh; stop it with test/cluster/slurm-down.sh $SLURM_DIR
SLURM_CONF=$SLURM_CONF_FILE
SLURMRESTD_URL=http://127.0.0.1:$REST_PORT
SLURMRESTD_SOCKET=$SLURM_REST_SOCKET
SLURM_JWT_FILE=$SLURM_JWT_FILE
SLURM_USER=$SLURM_USER
SLURM_NODES="${NODE_LIST[*]}"
SLURM_SHARED_PARTITION=batch
SLURM_RECLAIM_PARTITION=reclaim
SLURM_BIN=$SLURM_BIN_DIR
SLURM_CLUSTER_NAME=$CLUSTER_NAME
SLURM_JOBS_DIR=$SLURM_DIR/jobs
SLURM_PREFIX=$SLURM_PREFIX
SLURM_RELEASE=$SLURM_RELEASE
SLURM_VERSION=$SLURM_VERSION
SLURM_ROOT=$SLURM_ROOT
SLURMRESTD_API=$REST_API
ENV
mv "$SLURM_ENV_FILE.tmp" "$SLURM_ENV_FILE"

if [ -n "$OWNER_PID" ]; then
  # Runs slurm-down.sh when the owner is gone, however it died (SIGKILL from a ctest timeout too).
  setsid env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin ONEQUEUE_SLURM_DIR="$SLURM_DIR" ONEQUEUE_SLURM_WATCHDOG=1 \
    bash -c 'while s="$(ps -o stat= -p "$0")" && [ "${s:0:1}" != Z ]; do sleep 1; done; exec "$1" "$2"' \
    "$OWNER_PID" "$HERE/slurm-down.sh" "$SLURM_DIR" </dev/null >>"$SLURM_LOGS/watchdog.log" 2>&1 8>&- &
  echo $! >"$SLURM_PIDS/watchdog.pid"
fi

T1=$(date +%s.%N)
log "up in $(awk "BEGIN{printf \"%.2f\", $T1 - $T0}") s: source $SLURM_ENV_FILE"
