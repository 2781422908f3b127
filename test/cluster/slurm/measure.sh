#!/usr/bin/env bash
# Measures the local Slurm cluster: wall time of slurm-up.sh and slurm-down.sh, and the resident
# memory (RSS) of every daemon it started, for N nodes. Usage: test/cluster/slurm/measure.sh [N] [RUNS]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NODES="${1:-8}"
RUNS="${2:-3}"
for ((run = 1; run <= RUNS; run++)); do
  dir="$(mktemp -d /tmp/onequeue-slurm-measure-XXXXXX)"
  t0=$(date +%s.%N)
  "$HERE/../slurm-up.sh" "$dir" --nodes "$NODES" 2>/dev/null
  t1=$(date +%s.%N)
  declare -A rss=()
  total=0
  for f in "$dir"/pids/*.pid; do
    case "$f" in *.daemon.pid) continue ;; esac
    name="$(basename "$f" .pid)"
    kb="$(ps -o rss= -p "$(cat "$f")" | tr -d ' ')"
    total=$((total + kb))
    group="${name%%-*}"
    rss[$group]=$(( ${rss[$group]:-0} + kb ))
  done
  t2=$(date +%s.%N)
  "$HERE/../slurm-down.sh" "$dir" 2>/dev/null
  t3=$(date +%s.%N)
  printf 'nodes=%d run=%d up=%.2fs down=%.2fs rss_total=%.1fMB' "$NODES" "$run" \
    "$(echo "$t1 - $t0" | awk '{print $1 - $3}')" "$(echo "$t3 - $t2" | awk '{print $1 - $3}')" \
    "$(awk "BEGIN{print $total / 1024}")"
  for g in "${!rss[@]}"; do printf ' %s=%.1fMB' "$g" "$(awk "BEGIN{print ${rss[$g]} / 1024}")"; done
  echo
  rm -rf "$dir"
  unset rss
done
