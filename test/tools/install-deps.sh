#!/usr/bin/env bash
# Installs the Debian packages the build, the tests and the local cluster need, only those that
# are missing (so a warm machine spends no time here). Needs root, as CI runs.
set -euo pipefail
packages=(
  # build
  cmake ninja-build g++ pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  nlohmann-json3-dev libspdlog-dev libcurl4-openssl-dev libyaml-cpp-dev libbenchmark-dev prometheus-cpp-dev
  libsimdjson-dev libnghttp2-dev libssl-dev
  libgtest-dev libgmock-dev
  # fuzzing (clang's libFuzzer runtime)
  clang libclang-rt-14-dev
  # the local cluster: etcd, Slurm with slurmrestd and JWT, munge; tools the scripts use
  etcd-server etcd-client munge slurmctld slurmd slurmrestd slurm-client slurm-wlm-jwt-plugin
  openssl curl procps iproute2 util-linux jq
  # make image (and its test): the root file system and the OCI image, without a Docker engine
  mmdebstrap umoci
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# slurm-wlm-emulator switches slurmctld/slurmd to builds that cannot run here; make sure the real
# ones are selected if it was ever installed.
if update-alternatives --query slurmctld >/dev/null 2>&1; then
  update-alternatives --set slurmctld /usr/sbin/slurmctld-wlm >/dev/null 2>&1 || true
  update-alternatives --set slurmd /usr/sbin/slurmd-wlm >/dev/null 2>&1 || true
fi
if ! command -v go >/dev/null; then
  echo "install-deps: Go is needed to build the upstream Kubernetes tools (test/cluster/build-upstream.sh)" >&2
  exit 1
fi
echo "install-deps: all packages present"
