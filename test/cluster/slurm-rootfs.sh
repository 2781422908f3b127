#!/usr/bin/env bash
# Builds (once) and caches a Debian root filesystem holding a newer Slurm than bookworm's 22.05,
# for test/cluster/slurm-up.sh to run under chroot (see docs/local-slurm.md):
#   24.11 -> Debian trixie (slurm-wlm 24.11.5, REST v0.0.40-v0.0.42)
#   26.05 -> Debian forky  (slurm-wlm 26.05.5, REST v0.0.42-v0.0.45)
# Usage: test/cluster/slurm-rootfs.sh 24.11|26.05
# Cache: ${ONEQUEUE_CACHE:-$HOME/.cache/onequeue}/slurm-rootfs/<suite>, finished when it holds
# .done; a second run reuses it. A lock keeps two builds from racing. Prints the folder on stdout as
# its last line. Needs root (mmdebstrap --mode=root) and the Debian mirror of the machine's apt
# sources. About 20-60 s and 180 MB per suite.
set -euo pipefail
log() { echo "slurm-rootfs: $*" >&2; }
die() { echo "slurm-rootfs: ERROR: $*" >&2; exit 1; }

[ $# -eq 1 ] || { sed -n '2,11p' "${BASH_SOURCE[0]}" >&2; exit 2; }
version="$1"
aptopts=()
case "$version" in
  24.11) suite=trixie ;;
  # The registry's copy of forky carries an expired Release date.
  26.05) suite=forky; aptopts=(--aptopt='Acquire::Check-Valid-Until "false"') ;;
  22.05) die "Slurm 22.05 is bookworm's own package (test/tools/install-deps.sh); it needs no root filesystem" ;;
  *) die "unknown Slurm version '$version' (24.11 or 26.05)" ;;
esac
[ "$(id -u)" = 0 ] || die "must run as root (mmdebstrap --mode=root, chroot)"
command -v mmdebstrap >/dev/null || die "mmdebstrap is missing: run test/tools/install-deps.sh"

cache=${ONEQUEUE_CACHE:-$HOME/.cache/onequeue}
top="$cache/slurm-rootfs"
out="$top/$suite"
mkdir -p "$top"
exec 9>"$top/.lock"
flock 9
if [ -f "$out/.done" ]; then echo "$out"; exit 0; fi

# The plain Debian mirror the machine's apt sources name (deb822 "URIs:" or one-line "deb URL"),
# not the snapshot URL some images keep in a comment.
debian_mirror() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    grep -v '^[[:space:]]*#' "$f" | grep -oE 'https?://[^ ]+/debian/?' | grep -v -e security -e snapshot. |
      sed 's|/$||' | head -1
  done | head -1
}
mirror="${ONEQUEUE_DEBIAN_MIRROR:-$(debian_mirror)}"
[ -n "$mirror" ] || die "no Debian mirror in /etc/apt/sources.list(.d); set ONEQUEUE_DEBIAN_MIRROR"

rm -rf "$out" "$out.tmp"
log "building Slurm $version (Debian $suite) from $mirror into $out"
t0=$SECONDS
# mmdebstrap hands apt a pipe on the first free descriptor and apt's hook writes to it through
# /bin/sh ("cat >&N"); dash takes one-digit descriptors only, so when inherited descriptors (the
# lock above, a caller's) push the first free one to 10 or more, apt fails with "Bad fd number".
# mmdebstrap runs with only 0-2 open.
only_stdio() {
  local pid=$BASHPID fd
  for fd in $(ls "/proc/$pid/fd"); do
    case "$fd" in 0 | 1 | 2 | 255) ;; *) eval "exec $fd>&-" 2>/dev/null || true ;; esac
  done
}
if ! (only_stdio && exec mmdebstrap --variant=apt --mode=root "${aptopts[@]}" \
  --include=slurmctld,slurmd,slurmrestd,slurm-client,munge,slurm-wlm-jwt-plugin \
  "$suite" "$out.tmp" "$mirror") >"$top/$suite.log" 2>&1; then
  tail -20 "$top/$suite.log" >&2
  rm -rf "$out.tmp"
  die "mmdebstrap $suite failed (log: $top/$suite.log)"
fi
release="$(chroot "$out.tmp" /usr/sbin/slurmctld -V 2>/dev/null | awk '{print $2}')"
case "$release" in
  "$version".*) ;;
  *) rm -rf "$out.tmp"; die "Debian $suite holds Slurm '$release', not $version.x" ;;
esac
echo "$release" >"$out.tmp/.slurm-release"
# mmdebstrap writes no /etc/hosts; slurm-up.sh mounts the host's over this one in its namespace.
printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' >"$out.tmp/etc/hosts"
mv "$out.tmp" "$out"
touch "$out/.done"
log "Slurm $release in $out ($((SECONDS - t0)) s, $(du -sm "$out" | cut -f1) MB)"
echo "$out"
