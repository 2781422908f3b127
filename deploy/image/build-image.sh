#!/usr/bin/env bash
# `make image`: the container image the chart runs (onequeue/onequeue-scheduler:<appVersion>),
# built here without a Docker engine, from Debian's packages only:
#   1. the root file system: mmdebstrap, Debian bookworm, only the packages of the shared
#      libraries the two binaries load (found with ldd + dpkg -S, so the list cannot drift) and
#      the C library; no shell, no package manager (variant "extract");
#   2. onequeue-scheduler and oq (built by CMake in BUILD_DIR) in /usr/bin, stripped; the user
#      nonroot (65532) the chart runs as;
#   3. packed as an OCI image by umoci: OUT/oci (an OCI layout, tag <appVersion>) and
#      OUT/onequeue-scheduler-<appVersion>.oci.tar (`podman load -i`, or
#      `skopeo copy oci-archive:FILE docker://REGISTRY/onequeue/onequeue-scheduler:<appVersion>`).
# deploy/image/Dockerfile builds the same image for users with Docker.
# Usage: deploy/image/build-image.sh [BUILD_DIR] (OUT defaults to BUILD_DIR/image). Needs root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
out=${OUT:-$build/image}
tag=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$src/deploy/helm/onequeue/Chart.yaml")
repo=onequeue/onequeue-scheduler
bins=("$build/src/scheduler/onequeue-scheduler" "$build/src/scheduler/oq")
for b in "${bins[@]}"; do [[ -x $b ]] || { echo "build-image: $b is missing (cmake --build $build first)" >&2; exit 1; }; done
for t in mmdebstrap umoci; do
  command -v $t >/dev/null || { echo "build-image: $t is missing (apt-get install mmdebstrap umoci)" >&2; exit 1; }
done

# The packages that own the libraries the binaries load.
packages=$(for b in "${bins[@]}"; do ldd "$b"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
  while read -r lib; do dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")"; done |
  cut -d: -f1 | sort -u | tr '\n' ',')
packages="libc6,libgcc-s1,${packages%,}"
echo "build-image: runtime packages: $packages"

rm -rf "$out"
mkdir -p "$out"
rootfs="$out/rootfs"
# mmdebstrap hands apt a pipe on the first free descriptor and apt's hook writes to it through
# /bin/sh ("cat >&N"); dash takes one-digit descriptors only, so when a caller's inherited
# descriptors (flock's locks, make's jobserver) push the first free one to 10 or more, apt fails
# with "Bad fd number". mmdebstrap runs with only 0-2 open (as test/cluster/slurm-rootfs.sh).
only_stdio() {
  local pid=$BASHPID fd
  for fd in $(ls "/proc/$pid/fd"); do
    case "$fd" in 0 | 1 | 2 | 255) ;; *) eval "exec $fd>&-" 2>/dev/null || true ;; esac
  done
}
(only_stdio && exec mmdebstrap --variant=extract --include="$packages" \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  bookworm "$rootfs" http://deb.debian.org/debian) >"$out/mmdebstrap.log" 2>&1 ||
  { tail -20 "$out/mmdebstrap.log" >&2; exit 1; }
mkdir -p "$rootfs/usr/bin"
for b in "${bins[@]}"; do install -m 0755 "$b" "$rootfs/usr/bin/"; strip --strip-unneeded "$rootfs/usr/bin/$(basename "$b")"; done
mkdir -p "$rootfs/etc" "$rootfs/tmp" "$rootfs/home/nonroot"
chmod 1777 "$rootfs/tmp"
chown 65532:65532 "$rootfs/home/nonroot"
echo 'root:x:0:0:root:/root:/usr/sbin/nologin' >"$rootfs/etc/passwd"
echo 'nonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin' >>"$rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
# What extract leaves that a runtime image does not need.
rm -rf "$rootfs/var/cache/apt" "$rootfs/var/lib/apt/lists" "$rootfs/var/log"/* "$rootfs/dev"/*

umoci init --layout "$out/oci"
umoci new --image "$out/oci:$tag"
umoci unpack --image "$out/oci:$tag" "$out/bundle" >/dev/null
cp -a "$rootfs/." "$out/bundle/rootfs/"
umoci repack --image "$out/oci:$tag" "$out/bundle"
umoci config --image "$out/oci:$tag" --author onequeue --os linux --architecture amd64 \
  --config.user 65532:65532 --config.entrypoint /usr/bin/onequeue-scheduler \
  --config.workingdir / --config.env PATH=/usr/bin \
  --config.label org.opencontainers.image.title=onequeue-scheduler \
  --config.label org.opencontainers.image.version="$tag" \
  --manifest.annotation org.opencontainers.image.ref.name="$repo:$tag"
umoci gc --layout "$out/oci"
rm -rf "$out/bundle" "$rootfs"
tar -C "$out/oci" -cf "$out/onequeue-scheduler-$tag.oci.tar" .
echo "build-image: $repo:$tag in $out/oci and $out/onequeue-scheduler-$tag.oci.tar ($(du -sh "$out/oci" | cut -f1))"
