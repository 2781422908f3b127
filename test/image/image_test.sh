#!/usr/bin/env bash
# The image `make image` builds, as a user's container runtime would run it: built into a temporary
# folder, unpacked from its OCI layout (umoci), and both binaries run inside its root file system
# (chroot, as user 65532): --version, and --check-config on a configuration like the chart's. A
# runtime library missing from the image fails here (the dynamic loader cannot start the binary).
# Also: the reference is the chart's default (values image.repository, Chart appVersion), the
# image runs as 65532, and it holds no shell, package manager or compiler.
# Usage: image_test.sh BUILD_DIR SOURCE_DIR. Needs root (mmdebstrap, chroot) and Debian's mirror.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "image_test: FAIL: $*" >&2; exit 1; }

OUT="$work/image" "$src/deploy/image/build-image.sh" "$build"
tag=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$src/deploy/helm/onequeue/Chart.yaml")
repo=$(sed -n '/^image:/,/^[a-z]/s/^  repository: *\([^ ]*\).*/\1/p' "$src/deploy/helm/onequeue/values.yaml")
chart_tag=$(sed -n '/^image:/,/^[a-z]/s/^  tag: *"\([^"]*\)".*/\1/p' "$src/deploy/helm/onequeue/values.yaml")
[[ -z $chart_tag ]] || fail "values.yaml image.tag is \"$chart_tag\"; the chart's default is appVersion, which make image tags"
ref=$(jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]' "$work/image/oci/index.json")
[[ $ref == "$tag" ]] || fail "the OCI layout's tag is $ref, the chart's appVersion $tag"
manifest=$(jq -r '.manifests[0].digest' "$work/image/oci/index.json" | sed 's/sha256://')
config=$(jq -r '.config.digest' "$work/image/oci/blobs/sha256/$manifest" | sed 's/sha256://')
cfg="$work/image/oci/blobs/sha256/$config"
[[ $(jq -r '.config.User' "$cfg") == "65532:65532" ]] || fail "the image's user is $(jq -r '.config.User' "$cfg")"
[[ $(jq -r '.config.Entrypoint[0]' "$cfg") == /usr/bin/onequeue-scheduler ]] || fail "entrypoint"
grep -q "\"$repo:$tag\"" "$work/image/oci/blobs/sha256/$manifest" || fail "the manifest does not name $repo:$tag"

umoci unpack --image "$work/image/oci:$tag" "$work/bundle" >/dev/null
root="$work/bundle/rootfs"
for absent in bin/sh usr/bin/bash usr/bin/apt usr/bin/dpkg usr/bin/g++ usr/bin/cc; do
  [[ ! -e $root/$absent ]] || fail "$absent is in the image: only the runtime libraries belong there"
done
out=$(chroot --userspec=65532:65532 "$root" /usr/bin/onequeue-scheduler --version) || fail "onequeue-scheduler --version: $out"
[[ $out == "onequeue-scheduler $tag" ]] || fail "onequeue-scheduler --version said: $out"
out=$(chroot --userspec=65532:65532 "$root" /usr/bin/oq --version) || fail "oq --version: $out"
[[ $out == "oq $tag" ]] || fail "oq --version said: $out"
cat >"$root/tmp/config.yaml" <<'YAML'
apiVersion: onequeue.io/v1alpha1
kind: SchedulerConfiguration
schedulerName: onequeue
poolLabel: onequeue.io/pool
slurm: {enabled: true, url: "https://slurmrestd:6820", tokenFile: /var/run/onequeue/slurm/token, lendMechanism: placeholder, sharedPartitions: [batch]}
queue:
  qos: [{name: interactive, priority: 1000, canPreempt: true, preemptible: false}, {name: batch, priority: 10}]
server: {grpcAddress: "0.0.0.0:50051", metricsAddress: "0.0.0.0:9090", adminTokenFile: /var/run/onequeue/admin/token, tlsCertFile: /var/run/onequeue/tls/tls.crt, tlsKeyFile: /var/run/onequeue/tls/tls.key}
leaderElection: {enabled: true, namespace: onequeue-system, leaseName: onequeue, leaseDurationSeconds: 15}
YAML
out=$(chroot --userspec=65532:65532 "$root" /usr/bin/onequeue-scheduler --check-config --config /tmp/config.yaml) ||
  fail "--check-config in the image: $out"
[[ $out == *valid* ]] || fail "--check-config said: $out"
echo "image_test: $repo:$tag: $(du -sh "$work/image/oci" | cut -f1), --version and --check-config run in it as 65532"
