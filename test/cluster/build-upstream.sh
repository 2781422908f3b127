#!/usr/bin/env bash
# Builds the upstream binaries the tests need from their Go modules (no downloads of release
# binaries are possible here) and caches them outside the work tree, keyed by version:
#   $ONEQUEUE_CACHE/upstream/<key>/bin/{kube-apiserver,kube-controller-manager,kube-scheduler,kubectl,kwok,helm,etcd,e2e-scheduling.test}
# Idempotent: a finished build (marked by .done) is reused. A lock keeps two builds from racing.
# Prints the bin directory on stdout as its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
cache=${ONEQUEUE_CACHE:-$HOME/.cache/onequeue}
# ONEQUEUE_K8S=oldest: the control plane of the oldest supported minor (KUBERNETES_OLDEST_VERSION:
# kube-apiserver, kube-controller-manager, kube-scheduler), the second entry of the test matrix;
# kubectl, kwok, helm and etcd are the newest build's (built first). Anything else: the newest.
if [ "${ONEQUEUE_K8S:-newest}" = oldest ]; then
  newest_bin=$(ONEQUEUE_K8S=newest bash "$0" | tail -n 1)
  KUBERNETES_VERSION=$KUBERNETES_OLDEST_VERSION
  KUBERNETES_STAGING_VERSION=$KUBERNETES_OLDEST_STAGING_VERSION
  key="k8s-${KUBERNETES_VERSION}_control-plane"
  components="kube-apiserver kube-controller-manager kube-scheduler"
else
  newest_bin=""
  key="k8s-${KUBERNETES_VERSION}_kwok-${KWOK_VERSION}_helm-${HELM_VERSION}"
  components="kube-apiserver kube-controller-manager kube-scheduler kubectl"
fi
out="$cache/upstream/$key"
bin="$out/bin"
mkdir -p "$cache/upstream"
exec 9>"$cache/upstream/.lock"
flock 9
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
export GOPATH=${GOPATH:-$cache/gopath}
export GOCACHE=${ONEQUEUE_GOCACHE:-$cache/go-build}
log() { echo "build-upstream: $*" >&2; }

# --- etcd: built from its module like the rest, not Debian's 3.4. The apiserver answers kwok's
# streaming watch lists only when etcd supports watch progress requests (3.4 does not): with
# Debian's etcd kwok's watches ended every few seconds and it relisted, so pods turned Running
# and deleted pods went tens of seconds late (docs/e2e.md). Also built into an existing cache.
build_etcd() {
  [ -x "$bin/etcd" ] && return 0
  log "building etcd $ETCD_VERSION"
  local ew="$out/etcd-wrapper"
  mkdir -p "$ew"
  printf 'module onequeue.local/etcdwrapper\n\ngo 1.24.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n' \
    "$ETCD_VERSION" > "$ew/go.mod"
  cat > "$ew/main.go" <<'GO'
// etcd's own main (go.etcd.io/etcd/v3 is not importable as a module at a tag; etcdmain is).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  (cd "$ew" && { go mod tidy -e >&2 || GOSUMDB=off go mod tidy -e >&2; } &&
    go build -ldflags "-s -w" -o "$bin/etcd.tmp" . >&2)
  mv "$bin/etcd.tmp" "$bin/etcd"
}

major=${KUBERNETES_VERSION#v}; minor=${major#*.}; major=${major%%.*}; minor=${minor%%.*}
ldflags="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $p.gitVersion=$KUBERNETES_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor"
  ldflags+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done
# --- The upstream sig-scheduling e2e specs (test/conformance/scheduling_e2e_test.go): the same
# k8s.io/kubernetes module as the apiserver, linked as a Go test binary without the other SIGs
# (about 80 s on 2 cores with a warm module cache; the full e2e.test links every SIG and cloud
# provider). Rebuilt when that source changes (its sha256 is kept beside the binary); also built
# into an existing cache.
build_conformance() {
  local src="$here/../conformance/scheduling_e2e_test.go" cw="$out/conformance-wrapper"
  local sum
  sum=$(sha256sum "$src" | cut -d' ' -f1)
  [ -x "$bin/e2e-scheduling.test" ] && [ "$(cat "$bin/e2e-scheduling.test.sha256" 2>/dev/null)" = "$sum" ] && return 0
  log "building e2e-scheduling.test (upstream test/e2e/scheduling at $KUBERNETES_VERSION)"
  mkdir -p "$cw"
  sed 's#^module onequeue.local/k8swrapper$#module onequeue.local/conformance#' "$out/k8s-wrapper/go.mod" > "$cw/go.mod"
  cp "$out/k8s-wrapper/go.sum" "$cw/go.sum"
  cp "$src" "$cw/"
  (cd "$cw" && { go mod tidy -e >&2 || GOSUMDB=off go mod tidy -e >&2; } &&
    go test -c -tags=selinux,notest,grpcnotrace -ldflags "$ldflags" -o "$bin/e2e-scheduling.test.tmp" . >&2) ||
    return 1
  mv "$bin/e2e-scheduling.test.tmp" "$bin/e2e-scheduling.test" || return 1
  echo "$sum" > "$bin/e2e-scheduling.test.sha256"
}
# A failed build of the specs costs only the conformance test (its run.sh says the binary is
# missing), not every other tool of the cache.
build_conformance_or_warn() {
  build_conformance || log "e2e-scheduling.test NOT built: sig_scheduling_conformance_e2e_test will fail"
}

command -v go >/dev/null || { echo "build-upstream: go is not installed" >&2; exit 1; }
mkdir -p "$bin"
if [ -f "$out/.done" ]; then [ -n "$newest_bin" ] || { build_etcd; build_conformance_or_warn; }; echo "$bin"; exit 0; fi

# --- Kubernetes: a wrapper module replacing each staging module with its published version.
wrap="$out/k8s-wrapper"
mkdir -p "$wrap"
staging="api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api
cri-client csi-translation-lib dynamic-resource-allocation endpointslice externaljwt kms
kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
mount-utils pod-security-admission sample-apiserver"
{
  echo "module onequeue.local/k8swrapper"
  echo
  echo "go 1.24.0"
  echo
  echo "godebug default=go1.24"
  echo
  echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
  echo
  echo "replace ("
  for m in $staging; do echo "	k8s.io/$m => k8s.io/$m $KUBERNETES_STAGING_VERSION"; done
  echo ")"
} > "$wrap/go.mod"
cat > "$wrap/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
cd "$wrap"
log "resolving Kubernetes $KUBERNETES_VERSION modules"
go mod tidy -e >&2 || GOSUMDB=off go mod tidy -e >&2
for c in $components; do
  if [ ! -x "$bin/$c" ]; then
    log "building $c"
    go build -tags=selinux,notest,grpcnotrace -ldflags "$ldflags" -o "$bin/$c.tmp" "k8s.io/kubernetes/cmd/$c" >&2
    mv "$bin/$c.tmp" "$bin/$c"
  fi
done

if [ -n "$newest_bin" ]; then
  for t in kubectl kwok helm etcd; do ln -sfn "$newest_bin/$t" "$bin/$t"; done
  touch "$out/.done"
  log "done: $(du -sh "$out" | cut -f1) in $out"
  echo "$bin"
  exit 0
fi

# --- kwok and helm: plain modules.
gobin_install() { # module@version name
  if [ ! -x "$bin/$2" ]; then
    log "building $2 from $1"
    GOBIN="$bin" go install -ldflags "-s -w" "$1" >&2
  fi
}
gobin_install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" kwok
helm_ld="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
if [ ! -x "$bin/helm" ]; then
  log "building helm $HELM_VERSION"
  GOBIN="$bin" go install -ldflags "$helm_ld" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
fi
build_etcd
build_conformance_or_warn
touch "$out/.done"
log "done: $(du -sh "$out" | cut -f1) in $out"
echo "$bin"
