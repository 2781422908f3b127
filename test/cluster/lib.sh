# Shared shell helpers of the local Kubernetes control plane (up.sh, down.sh, restart-apiserver.sh,
# etcd-compact.sh). Sourced, never run. Every component is described by files in the cluster DIR:
#   DIR/args/<name>.args   its exact command line, one argument per line (restarts reuse it)
#   DIR/pids/<name>.pid    the PID it runs under
#   DIR/logs/<name>.log    its stdout and stderr
# so that a restart is exact and down.sh stops only what up.sh started.

oq_log() { echo "cluster: $*" >&2; }
oq_die() { echo "cluster: error: $*" >&2; exit 1; }

# A port nobody listens on, below the kernel's ephemeral range (32768+), so that outgoing connections
# never take it between our choice and the bind. Several clusters may choose at once: the caller
# detects "address already in use" and chooses again (oq_start_checked).
oq_free_port() {
  local port i
  for i in $(seq 1 200); do
    port=$((20000 + RANDOM % 12000))
    if [ -z "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; then
      echo "$port"
      return 0
    fi
  done
  oq_die "no free loopback port found in 20000-32000"
}

# oq_write_args DIR NAME ARG...: records the command line of component NAME.
oq_write_args() {
  local dir=$1 name=$2
  shift 2
  mkdir -p "$dir/args"
  printf '%s\n' "$@" > "$dir/args/$name.args"
}

# oq_start DIR NAME: starts component NAME from DIR/args/NAME.args in its own session (so an
# interactive Ctrl-C in the caller's terminal does not reach it and it outlives up.sh), records its
# PID. setsid does not fork here (a background job is not a group leader), so $! is the real PID.
oq_start() {
  local dir=$1 name=$2 pid
  local -a argv
  mapfile -t argv < "$dir/args/$name.args"
  mkdir -p "$dir/pids" "$dir/logs"
  echo "=== $(date -u +%FT%TZ) start: ${argv[*]}" >> "$dir/logs/$name.log"
  # The subshell closes every inherited descriptor above 2 (a caller's pipe held open by a daemon
  # would keep that caller waiting for EOF forever), then execs setsid, so $! is still the PID.
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      [ "$fd" -gt 2 ] 2>/dev/null && eval "exec $fd>&-"
    done
    exec setsid "${argv[@]}" >> "$dir/logs/$name.log" 2>&1 < /dev/null
  ) &
  pid=$!
  echo "$pid" > "$dir/pids/$name.pid"
  # Until the child has closed its descriptors and exec'd (bash -> setsid -> the program), its
  # cmdline is not the program's, and oq_pid would call it gone (seen under load: "exited during
  # start" with an empty log). Wait, bounded, for the exec.
  local i
  for i in $(seq 1 200); do
    [ -d "/proc/$pid" ] || break
    [ "$(tr '\0' '\n' 2>/dev/null < "/proc/$pid/cmdline" | head -n 1)" = "${argv[0]}" ] && break
    sleep 0.05
  done
}

# oq_pid DIR NAME: the recorded PID of NAME if that process still runs the recorded program
# (guards against PID reuse), else nothing.
oq_pid() {
  local dir=$1 name=$2 pid exe
  [ -f "$dir/pids/$name.pid" ] || return 0
  pid=$(cat "$dir/pids/$name.pid")
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 0
  exe=$(head -n 1 "$dir/args/$name.args" 2>/dev/null || true)
  # /proc/PID/cmdline's first field is the program as it was exec'd (setsid execs it unchanged).
  if [ -n "$exe" ] && [ "$(tr '\0' '\n' 2>/dev/null < "/proc/$pid/cmdline" | head -n 1)" != "$exe" ]; then
    return 0
  fi
  echo "$pid"
}

# oq_alive DIR NAME: true while NAME runs.
oq_alive() { [ -n "$(oq_pid "$1" "$2")" ]; }

# oq_stop DIR NAME [GRACE_SECONDS]: TERM, bounded wait, then KILL. Idempotent.
oq_stop() {
  local dir=$1 name=$2 grace=${3:-10} pid i
  pid=$(oq_pid "$dir" "$name")
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 $((grace * 10))); do
      [ -d "/proc/$pid" ] || break
      # A zombie child of this shell is gone for every purpose but the process table.
      [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && break
      sleep 0.1
    done
    if [ -d "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]; then
      oq_log "$name (pid $pid) ignored TERM for ${grace}s, killing it"
      kill -KILL "$pid" 2>/dev/null || true
      for i in $(seq 1 50); do
        [ -d "/proc/$pid" ] || break
        [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && break
        sleep 0.1
      done
      if [ -d "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]; then
        oq_log "$name (pid $pid) survived KILL"
        return 1  # keep its pid file: down.sh reports it
      fi
    fi
  fi
  rm -f "$dir/pids/$name.pid"
}

# oq_wait_for DIR NAME SECONDS COMMAND...: polls COMMAND every 0.25 s until it succeeds; fails early
# if component NAME has exited, and after SECONDS. Returns 0 ready, 1 exited, 2 timed out.
oq_wait_for() {
  local dir=$1 name=$2 seconds=$3 deadline
  shift 3
  deadline=$(($(date +%s) + seconds))
  while :; do
    if "$@" >/dev/null 2>&1; then return 0; fi
    oq_alive "$dir" "$name" || return 1
    [ "$(date +%s)" -lt "$deadline" ] || return 2
    sleep 0.25
  done
}

# oq_bind_conflict DIR NAME: true if NAME's last start failed because its port was taken.
oq_bind_conflict() {
  awk '/^=== .* start: /{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$1/logs/$2.log" 2>/dev/null |
    grep -qi 'address already in use'
}

# oq_env_get DIR KEY: the value of KEY in DIR/env.
oq_env_get() { sed -n "s/^$2=//p" "$1/env" | tail -n 1; }

# oq_https_ok CA URL [TOKEN]: true if URL answers "ok" over TLS verified against CA.
oq_https_ok() {
  local body
  local -a auth=()
  [ -n "${3:-}" ] && auth=(-H "Authorization: Bearer $3")
  body=$(curl -sS --fail --max-time 5 --cacert "$1" "${auth[@]}" "$2") || return 1
  [ "$body" = ok ]
}

# oq_listens DIR NAME PORT: true if component NAME itself listens on 127.0.0.1:PORT (not some other
# process that took the port first).
oq_listens() {
  local pid
  pid=$(oq_pid "$1" "$2")
  [ -n "$pid" ] && ss -Hltnp "sport = :$3" 2>/dev/null | grep -q "pid=$pid,"
}

# oq_tail_log DIR NAME: the end of NAME's log, for error messages.
oq_tail_log() {
  echo "----- last lines of $1/logs/$2.log -----" >&2
  tail -n 25 "$1/logs/$2.log" >&2 2>/dev/null || true
  echo "-----" >&2
}
