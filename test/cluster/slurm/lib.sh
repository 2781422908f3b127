# Shared functions of test/cluster/slurm-*.sh (sourced, not run). Everything here acts on ONE
# cluster folder ($SLURM_DIR) and on the processes whose PIDs it recorded under $SLURM_DIR/pids.

SLURM_TEMPLATES="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SLURM_PORT_CLAIMS="${ONEQUEUE_PORT_CLAIMS:-/tmp/onequeue-port-claims}"
SLURM_USER=slurm
# Ports are taken below the kernel's ephemeral range (32768+), so no outgoing connection can hold
# them, and below the 20000-32000 the Kubernetes scripts (test/cluster/lib.sh) pick from, so the two
# never race for a port.
SLURM_PORT_MIN=10000
SLURM_PORT_MAX=20000

log() { echo "[slurm $(date +%H:%M:%S)] $*" >&2; }

die() {
  echo "slurm: ERROR: $*" >&2
  exit 1
}

# slurm_set_paths DIR: the layout of a cluster folder.
slurm_set_paths() {
  SLURM_DIR="$1"
  SLURM_CONF_FILE="$SLURM_DIR/slurm.conf"
  SLURM_PIDS="$SLURM_DIR/pids"
  SLURM_LOGS="$SLURM_DIR/logs"
  SLURM_BIN_DIR="$SLURM_DIR/bin"
  SLURM_MUNGE_SOCKET="$SLURM_DIR/munge/munge.socket.2"
  SLURM_REST_SOCKET="$SLURM_DIR/slurmrestd.socket"
  SLURM_JWT_FILE="$SLURM_DIR/slurm.jwt"
  SLURM_ENV_FILE="$SLURM_DIR/slurm.env"
  SLURM_PORTS_FILE="$SLURM_DIR/ports.env"
}

# Client commands of this cluster (root is a Slurm admin; SLURM_CONF picks the cluster), from the
# installation the cluster runs (DIR/bin links to it): a 22.05 scontrol cannot talk to a 25.11
# slurmctld. Before DIR/bin exists, from PATH.
sl() {
  local cmd="$1"
  shift
  [ -x "$SLURM_BIN_DIR/$cmd" ] && cmd="$SLURM_BIN_DIR/$cmd"
  SLURM_CONF="$SLURM_CONF_FILE" "$cmd" "$@"
}

# slurm_detect PREFIX: what the Slurm installation under PREFIX is and serves over REST. Sets
#   SLURM_RELEASE  e.g. 22.05.8 (slurmctld -V)
#   REST_PLUGINS   slurmrestd's -s list: openapi/slurmctld where it exists (23.02 and later: one
#                  plugin for every data_parser installed), else every openapi/v0.0.NN (NN >= 37)
#   REST_API       the highest REST version onequeue supports (v0.0.38 .. v0.0.45) it serves
slurm_detect() {
  local prefix="$1" d f n plugdir="" best=0 old=()
  if [ -n "${SLURM_ROOT:-}" ]; then
    # A newer Debian's binaries need that Debian's glibc: ask them inside their root filesystem.
    SLURM_RELEASE="$(chroot "$SLURM_ROOT" /usr/sbin/slurmctld -V 2>/dev/null | awk '{print $2}')"
  else
    SLURM_RELEASE="$("$prefix/sbin/slurmctld" -V 2>/dev/null | awk '{print $2}')"
  fi
  [ -n "$SLURM_RELEASE" ] || die "$prefix/sbin/slurmctld -V printed no version: is $prefix a Slurm installation?"
  # Debian: PREFIX/lib/<triplet>/slurm-wlm; a source build: PREFIX/lib/slurm or PREFIX/lib64/slurm.
  for d in "$prefix"/lib/*/slurm-wlm "$prefix"/lib/slurm-wlm "$prefix"/lib/slurm "$prefix"/lib64/slurm "$prefix"/lib/*/slurm; do
    if compgen -G "$d/openapi_*.so" >/dev/null; then plugdir="$d"; break; fi
  done
  [ -n "$plugdir" ] || die "no slurmrestd plugins (openapi_*.so) under $prefix/lib*: was Slurm $SLURM_RELEASE built with slurmrestd?"
  if [ -f "$plugdir/openapi_slurmctld.so" ]; then
    REST_PLUGINS=openapi/slurmctld
    for f in "$plugdir"/data_parser_v0_0_*.so; do
      n="${f##*_v0_0_}"; n="${n%.so}"
      [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -le 45 ] && [ "$n" -gt "$best" ] && best="$n"
    done
  else
    for f in "$plugdir"/openapi_v0_0_*.so; do
      n="${f##*_v0_0_}"; n="${n%.so}"
      [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 37 ] || continue
      old+=("$n")
      [ "$n" -le 45 ] && [ "$n" -gt "$best" ] && best="$n"
    done
    REST_PLUGINS="$(printf 'openapi/v0.0.%s\n' "${old[@]}" | sort -t. -k3,3nr | paste -sd,)"
  fi
  [ "$best" -ge 38 ] || die "slurmrestd of Slurm $SLURM_RELEASE ($plugdir) serves no REST version onequeue supports (v0.0.38 to v0.0.45)"
  REST_API="v0.0.$best"
}

# A PID is alive if it exists and is not a zombie (our daemons are reparented to whatever PID 1
# the machine has, which may be slow to reap them). Bash builtins only: stop_pids calls this for
# every slurmd.
pid_alive() {
  local stat rest
  [ -n "$1" ] || return 1
  { IFS= read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  rest="${stat##*) }" # the command name may hold spaces and parentheses: the state follows the last ')'
  [ "${rest%% *}" != Z ]
}

# pid_is_ours PID: the process carries this cluster's marker (a stale pid file never makes us
# signal an unrelated process that got the same PID).
# pid_is_ours PID [DIR]: the same for the cluster in DIR.
pid_is_ours() {
  local kv marker="ONEQUEUE_SLURM_DIR=${2:-$SLURM_DIR}"
  while IFS= read -r -d '' kv; do
    [ "$kv" = "$marker" ] && return 0
  done 2>/dev/null <"/proc/$1/environ"
  return 1
}

read_pid() { [ -f "$SLURM_PIDS/$1.pid" ] && cat "$SLURM_PIDS/$1.pid" 2>/dev/null; }

# wait_until SECONDS DESCRIPTION COMMAND...: bounded polling every 0.1 s.
wait_until() {
  local timeout="$1" what="$2"
  shift 2
  local deadline=$((SECONDS + timeout))
  while ! "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "timed out after ${timeout}s waiting for: $what"
      return 1
    fi
    sleep 0.1
  done
}

show_log_tails() {
  local f
  for f in "$SLURM_LOGS"/*.log "$SLURM_DIR"/munge/munged.log; do
    [ -s "$f" ] || continue
    echo "----- tail of $f" >&2
    tail -n 15 "$f" >&2
  done
}

# --- Ports ------------------------------------------------------------------------------------
# Several clusters may start at once (one per test binary). A cluster claims a block of ports in
# $SLURM_PORT_CLAIMS under a lock and keeps it until slurm-down.sh, so a daemon that is stopped
# for a while (restart tests) gets its port back.
ports_in_use() {
  ss -Hant 2>/dev/null | awk '{print $4}' | sed 's/.*://' | sort -un
  local claim
  for claim in "$SLURM_PORT_CLAIMS"/slurm-*; do
    [ -f "$claim" ] || continue
    local start end dir
    read -r start end dir <"$claim" || continue
    if claim_is_stale "$claim" "$dir"; then
      rm -f "$claim"
      continue
    fi
    seq "$start" "$end"
  done
}

# claim_is_stale CLAIM DIR: its folder is gone, or (a minute after the claim, so a cluster that is
# still starting keeps it) none of the processes its folder records is alive: the cluster was killed
# without slurm-down.sh.
claim_is_stale() {
  local claim="$1" dir="$2" f pid
  [ -f "$dir/.port-claim" ] || return 0
  [ $(($(date +%s) - $(stat -c %Y "$claim"))) -ge 60 ] || return 1
  for f in "$dir"/pids/*.pid; do
    [ -f "$f" ] || continue
    pid="$(cat "$f" 2>/dev/null)"
    pid_alive "$pid" && pid_is_ours "$pid" "$dir" && return 1
  done
  return 0
}

# claim_ports COUNT: sets PORT_BASE, the first of COUNT consecutive free ports.
claim_ports() {
  local count="$1"
  mkdir -p "$SLURM_PORT_CLAIMS"
  chmod 1777 "$SLURM_PORT_CLAIMS" 2>/dev/null || true
  exec 9>>"$SLURM_PORT_CLAIMS/.lock"
  flock -w 60 9 || die "could not lock $SLURM_PORT_CLAIMS/.lock within 60 s"
  local used
  used="$(ports_in_use | tr '\n' ' ')"
  local try start p ok
  for try in $(seq 1 500); do
    start=$((SLURM_PORT_MIN + (RANDOM * 32768 + RANDOM) % (SLURM_PORT_MAX - SLURM_PORT_MIN - count)))
    ok=1
    for ((p = start; p < start + count; p++)); do
      case " $used " in *" $p "*) ok=0; break ;; esac
    done
    if [ "$ok" = 1 ]; then
      echo "$start $((start + count - 1)) $SLURM_DIR" >"$SLURM_PORT_CLAIMS/slurm-$start"
      echo "$SLURM_PORT_CLAIMS/slurm-$start" >"$SLURM_DIR/.port-claim"
      PORT_BASE="$start"
      flock -u 9
      exec 9>&-
      return 0
    fi
  done
  flock -u 9
  exec 9>&-
  die "no block of $count free ports between $SLURM_PORT_MIN and $SLURM_PORT_MAX"
}

release_ports() {
  if [ -f "$SLURM_DIR/.port-claim" ]; then
    rm -f "$(cat "$SLURM_DIR/.port-claim")" "$SLURM_DIR/.port-claim"
  fi
}

# --- Starting daemons -------------------------------------------------------------------------
# Every daemon runs in the foreground (-D / -F) in the background of this shell, so $! is its PID;
# setpriv and env exec in place. env -i gives it a clean environment with a marker by which
# slurm-down.sh recognises this cluster's slurmstepd processes.
daemon_env() {
  echo env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin ONEQUEUE_SLURM_DIR="$SLURM_DIR" SLURM_CONF="$SLURM_CONF_FILE"
}

# start_daemon NAME USER LOGFILE COMMAND...: starts it, records its PID in pids/NAME.pid.
start_daemon() {
  local name="$1" user="$2" logfile="$3"
  shift 3
  local as_user=()
  if [ "$user" = nobody ]; then
    as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
  else
    as_user=(setpriv --reuid="$user" --regid="$user" --init-groups)
  fi
  # The subshell execs, so $! is the daemon; its cwd is the cluster folder, not the caller's.
  # shellcheck disable=SC2046
  # 8>&-: slurm-up.sh keeps its caller's stderr on fd 8; a daemon holding it would keep the caller's
  # pipe open forever.
  (cd "$SLURM_DIR" && exec setsid $(in_root) "${as_user[@]}" $(daemon_env) "$@" </dev/null >>"$logfile" 2>&1 8>&-) &
  echo $! >"$SLURM_PIDS/$name.pid"
}

# --- A newer Slurm in a root filesystem (slurm-rootfs.sh) -------------------------------------
# With SLURM_ROOT set (ports.env), every daemon and client command runs under `chroot SLURM_ROOT`
# inside ONE private mount namespace per cluster, held by a `sleep infinity` (pids/mountns.pid) that
# mounted /dev, /proc, /sys, a private /tmp, the host's /etc/hosts and the cluster folder (at its own path) into the root
# filesystem. Nothing is mounted on the host: the mounts vanish with the namespace's last process.
# Several clusters may share one root filesystem; the namespace tells their processes apart.

# in_root: the command prefix that enters this cluster's namespace and root ("" without SLURM_ROOT).
in_root() {
  [ -n "${SLURM_ROOT:-}" ] || return 0
  echo nsenter -t "$(read_pid mountns)" -m -- chroot "$SLURM_ROOT"
}

# root_ids USER: "UID:GID" of USER in the root filesystem (munge's differ from the host's).
root_ids() {
  local uid gid
  uid="$(awk -F: -v u="$1" '$1 == u {print $3}' "$SLURM_ROOT/etc/passwd")"
  gid="$(awk -F: -v u="$1" '$1 == u {print $4}' "$SLURM_ROOT/etc/passwd")"
  [ -n "$uid" ] || die "no user $1 in $SLURM_ROOT/etc/passwd"
  echo "$uid:$gid"
}

# chown_as USER PATH...: chown to USER as the daemons will see it (in the root filesystem if any).
chown_as() {
  local user="$1"
  shift
  if [ -n "${SLURM_ROOT:-}" ]; then chown -R "$(root_ids "$user")" "$@"; else chown -R "$user:$user" "$@"; fi
}

mountns_ready() {
  local pid
  pid="$(read_pid mountns)"
  pid_alive "$pid" && [ "$(readlink "/proc/$pid/root")" = "$SLURM_ROOT" ]
}

start_mount_namespace() {
  [ -n "${SLURM_ROOT:-}" ] || return 0
  # shellcheck disable=SC2016
  (cd / && exec setsid env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin ONEQUEUE_SLURM_DIR="$SLURM_DIR" \
    unshare -m --propagation private -- bash -c '
      set -e
      root="$1" dir="$2"
      mount --rbind /dev "$root/dev"
      mount -t proc proc "$root/proc"
      mount --rbind /sys "$root/sys"
      mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
      # The host name slurmctld resolves (its own, "localhost") as the host does.
      mount --bind /etc/hosts "$root/etc/hosts"
      mkdir -p "$root$dir"
      mount --bind "$dir" "$root$dir"
      exec chroot "$root" sleep infinity' mountns "$SLURM_ROOT" "$SLURM_DIR" \
    </dev/null >>"$SLURM_LOGS/mountns.log" 2>&1 8>&-) &
  echo $! >"$SLURM_PIDS/mountns.pid"
  wait_until 10 "the mount namespace of $SLURM_ROOT" mountns_ready || {
    cat "$SLURM_LOGS/mountns.log" >&2
    die "could not set up the private mount namespace (unshare -m) for $SLURM_ROOT"
  }
  readlink "/proc/$(read_pid mountns)/ns/mnt" >"$SLURM_PIDS/mountns.id"
}

# root_wrapper NAME PATH: DIR/bin/NAME runs PATH (a path in the root filesystem) in the cluster's
# namespace and root, in the caller's folder when the root filesystem sees it (else /), as root, or
# as $ONEQUEUE_SLURM_RUN_AS when set (the tests submit jobs as SlurmUser). Needs root (nsenter).
root_wrapper() {
  local name="$1" path="$2"
  cat >"$SLURM_BIN_DIR/$name" <<WRAP
#!/bin/bash
# $name of Slurm $SLURM_RELEASE in $SLURM_ROOT, for the cluster in $SLURM_DIR (test/cluster/slurm-up.sh).
ns="\$(cat "$SLURM_PIDS/mountns.pid" 2>/dev/null)"
if [ -z "\$ns" ] || [ "\$(readlink "/proc/\$ns/root" 2>/dev/null)" != "$SLURM_ROOT" ]; then
  echo "$name: the Slurm cluster in $SLURM_DIR is not running (no mount namespace)" >&2
  exit 1
fi
spec=()
if [ -n "\${ONEQUEUE_SLURM_RUN_AS:-}" ]; then spec=(--userspec="\$ONEQUEUE_SLURM_RUN_AS:\$ONEQUEUE_SLURM_RUN_AS"); fi
export SLURM_CONF="\${SLURM_CONF:-$SLURM_CONF_FILE}"
exec nsenter -t "\$ns" -m -- chroot "\${spec[@]}" "$SLURM_ROOT" /bin/sh -c 'cd "\$0" 2>/dev/null || cd /; exec "\$@"' "\$PWD" $path "\$@"
WRAP
  chmod 755 "$SLURM_BIN_DIR/$name"
}

# Processes of this cluster's namespace (root = SLURM_ROOT, same mount namespace), the holder too.
namespace_pids() {
  [ -n "${SLURM_ROOT:-}" ] && [ -f "$SLURM_PIDS/mountns.id" ] || return 0
  local id p
  id="$(cat "$SLURM_PIDS/mountns.id")"
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$SLURM_ROOT" ] && [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$id" ] &&
      echo "${p#/proc/}"
  done
}

munge_works() {
  local m=munge u=unmunge
  [ -x "$SLURM_BIN_DIR/munge" ] && m="$SLURM_BIN_DIR/munge" && u="$SLURM_BIN_DIR/unmunge"
  "$m" -n -S "$SLURM_MUNGE_SOCKET" | "$u" -S "$SLURM_MUNGE_SOCKET"
}

start_munged() {
  start_daemon munged munge "$SLURM_DIR/munge/munged.stdout" \
    /usr/sbin/munged -F --socket="$SLURM_MUNGE_SOCKET" \
    --key-file="$SLURM_DIR/munge/munge.key" --pid-file="$SLURM_DIR/munge/munged.pid" \
    --log-file="$SLURM_DIR/munge/munged.log" --seed-file="$SLURM_DIR/munge/munged.seed"
  wait_until 20 "munged answering on $SLURM_MUNGE_SOCKET" munge_works
}

# daemon_path NAME: the daemon's binary as its namespace sees it (under its own name: started as
# slurmd-wlm, slurmd drops its GPUs). In a root filesystem, Debian's /usr/sbin/NAME.
daemon_path() {
  if [ -n "${SLURM_ROOT:-}" ]; then echo "/usr/sbin/$1"; else echo "$SLURM_BIN_DIR/$1"; fi
}

slurmctld_up() {
  pid_alive "$(read_pid slurmctld)" && sl scontrol ping | grep -q 'is UP'
}

# Extra arguments go to slurmctld (slurm-daemon.sh restarts it with -R).
start_slurmctld() {
  start_daemon slurmctld "$SLURM_USER" "$SLURM_LOGS/slurmctld.stdout" \
    "$(daemon_path slurmctld)" -D -f "$SLURM_CONF_FILE" "$@"
  wait_until 30 "slurmctld answering scontrol ping" slurmctld_up
}

start_slurmd() {
  local node="$1"
  start_daemon "slurmd-$node" "$SLURM_USER" "$SLURM_LOGS/slurmd-$node.stdout" \
    "$(daemon_path slurmd)" -D -N "$node" -f "$SLURM_CONF_FILE"
}

rest_diag_ok() {
  local token
  token="$(cat "$SLURM_JWT_FILE")"
  curl -sf -o /dev/null --max-time 5 -H "X-SLURM-USER-NAME: $SLURM_USER" -H "X-SLURM-USER-TOKEN: $token" \
    "http://127.0.0.1:$REST_PORT/slurm/$REST_API/diag" &&
    curl -sf -o /dev/null --max-time 5 --unix-socket "$SLURM_REST_SOCKET" \
      -H "X-SLURM-USER-NAME: $SLURM_USER" -H "X-SLURM-USER-TOKEN: $token" \
      "http://localhost/slurm/$REST_API/diag"
}

# slurmrestd refuses to run as root or as SlurmUser: it runs as nobody, with SLURM_JWT=daemon so it
# talks to slurmctld with each client's own token. Its unix socket lives in a folder nobody owns,
# linked from $SLURM_REST_SOCKET. Its plugins ($REST_PLUGINS) and the version it is checked on
# ($REST_API) come from slurm_detect (slurm-up.sh) or DIR/ports.env (slurm-daemon.sh).
start_slurmrestd() {
  rm -f "$SLURM_DIR/rest/slurmrestd.socket"
  start_daemon slurmrestd nobody "$SLURM_LOGS/slurmrestd.log" \
    env SLURM_JWT=daemon "$(daemon_path slurmrestd)" -f "$SLURM_CONF_FILE" -a rest_auth/jwt \
    -s "$REST_PLUGINS" "127.0.0.1:$REST_PORT" "unix:$SLURM_DIR/rest/slurmrestd.socket"
  wait_until 30 "slurmrestd answering /slurm/$REST_API/diag on 127.0.0.1:$REST_PORT and $SLURM_REST_SOCKET" rest_diag_ok
}

# --- Stopping daemons -------------------------------------------------------------------------
# alive_among PID...: those that still run (zombies count as gone), with one ps call.
alive_among() {
  [ $# -gt 0 ] || return 0
  ps -o pid=,stat= -p "$(IFS=,; echo "$*")" 2>/dev/null | awk '$2 !~ /^Z/ {print $1}'
}

# stop_pids NAME...: TERM, up to 10 s, then KILL; only the PIDs this cluster recorded.
stop_pids() {
  local name pid pids=()
  for name in "$@"; do
    pid="$(read_pid "$name")"
    if pid_alive "$pid" && pid_is_ours "$pid"; then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done
  local deadline=$((SECONDS + 10)) alive
  alive="$(alive_among "${pids[@]}")"
  while [ -n "$alive" ] && [ "$SECONDS" -lt "$deadline" ]; do
    sleep 0.05
    # shellcheck disable=SC2086
    alive="$(alive_among $alive)"
  done
  if [ -n "$alive" ]; then
    log "PIDs $(echo $alive) did not stop on TERM within 10 s: KILL"
    # shellcheck disable=SC2086
    kill -KILL $alive 2>/dev/null || true
    local kill_deadline=$((SECONDS + 5))
    while [ -n "$alive" ] && [ "$SECONDS" -lt "$kill_deadline" ]; do
      sleep 0.05
      # shellcheck disable=SC2086
      alive="$(alive_among $alive)"
    done
  fi
  for name in "$@"; do rm -f "$SLURM_PIDS/$name.pid"; done
}
