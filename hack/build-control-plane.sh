#!/usr/bin/env bash
# Builds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok from Go modules
# (no downloads other than the Go module proxy) and caches them outside the clone, keyed by version.
# Prints the bin folder on stdout when done. Safe to run concurrently: a lock serialises builders.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=control-plane-versions.sh
source "$here/control-plane-versions.sh"

bins=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok)
have_all() { for b in "${bins[@]}"; do [ -x "$CONTROL_PLANE_BIN/$b" ] || return 1; done; }
log() { echo "build-control-plane: $*" >&2; }

if have_all; then echo "$CONTROL_PLANE_BIN"; exit 0; fi

mkdir -p "$(dirname "$CONTROL_PLANE_BIN")"
exec 9>"$(dirname "$CONTROL_PLANE_BIN")/.build.lock"
log "waiting for build lock"; flock 9
if have_all; then echo "$CONTROL_PLANE_BIN"; exit 0; fi

work="$(dirname "$CONTROL_PLANE_BIN")/src"
stage="$(dirname "$CONTROL_PLANE_BIN")/bin.partial"
mkdir -p "$work" "$stage"
start=$(date +%s)
log "building control plane (kube $KUBE_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION) into $CONTROL_PLANE_BIN"
log "a cold build takes about 25 minutes on 2 cores; later runs reuse the cache"

# --- kubernetes: a helper module that requires k8s.io/kubernetes and pins every staging module.
kdir="$work/kubernetes"
mkdir -p "$kdir"
if [ ! -x "$stage/kube-apiserver" ] || [ ! -x "$stage/kubectl" ]; then
  modjson=$(cd "$kdir" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$KUBE_VERSION")
  kgomod=$(printf '%s' "$modjson" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  staging_ver="v0${KUBE_VERSION#v1}"
  {
    echo "module dovetail.local/controlplane"
    echo
    echo "go $(go env GOVERSION | sed 's/^go//; s/\([0-9]*\.[0-9]*\).*/\1/')"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    grep -Eo '^\s*k8s\.io/[a-z0-9-]+ => \./staging/src/k8s\.io/[a-z0-9-]+' "$kgomod" | awk -v v="$staging_ver" '{print "replace " $1 " => " $1 " " v}'
  } > "$kdir/go.mod"
  cat > "$kdir/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
  (cd "$kdir" && GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true)
  (cd "$kdir" && GOFLAGS=-mod=mod go get "k8s.io/kubernetes@$KUBE_VERSION" >/dev/null)
  minor=$(echo "$KUBE_VERSION" | cut -d. -f2)
  ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"
  for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    [ -x "$stage/$b" ] && continue
    log "go build $b ($(( $(date +%s) - start ))s elapsed)"
    (cd "$kdir" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -tags tools -ldflags "$ldflags" -o "$stage/$b" "k8s.io/kubernetes/cmd/$b")
  done
fi

# --- etcd: a wrapper module around etcdmain (go install refuses upstream's replace directives).
if [ ! -x "$stage/etcd" ]; then
  edir="$work/etcd"
  mkdir -p "$edir"
  cat > "$edir/go.mod" <<MOD
module dovetail.local/etcd

go 1.24

require go.etcd.io/etcd/server/v3 $ETCD_VERSION
MOD
  cat > "$edir/main.go" <<'GO'
// Command etcd runs the etcd server; built from the etcd module because release binaries cannot be fetched here.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  log "go build etcd ($(( $(date +%s) - start ))s elapsed)"
  (cd "$edir" && GOFLAGS=-mod=mod go mod tidy >/dev/null && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -ldflags "-s -w" -o "$stage/etcd" .)
fi

# --- kwok: fake kubelets.
if [ ! -x "$stage/kwok" ]; then
  log "go build kwok ($(( $(date +%s) - start ))s elapsed)"
  if ! GOBIN="$stage" CGO_ENABLED=0 go install -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" 2>"$work/kwok-install.log"; then
    wdir="$work/kwok"; mkdir -p "$wdir"
    printf 'module dovetail.local/kwok\n\ngo 1.24\n\nrequire sigs.k8s.io/kwok %s\n' "$KWOK_VERSION" > "$wdir/go.mod"
    printf '//go:build tools\n\npackage tools\n\nimport _ "sigs.k8s.io/kwok/cmd/kwok"\n' > "$wdir/tools.go"
    (cd "$wdir" && GOFLAGS=-mod=mod go get "sigs.k8s.io/kwok@$KWOK_VERSION" >/dev/null && GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1; \
      GOFLAGS=-mod=mod CGO_ENABLED=0 go build -ldflags "-s -w" -o "$stage/kwok" sigs.k8s.io/kwok/cmd/kwok)
  fi
fi

for b in "${bins[@]}"; do [ -x "$stage/$b" ] || { log "missing $b after build"; exit 1; }; done
rm -rf "$CONTROL_PLANE_BIN"
mv "$stage" "$CONTROL_PLANE_BIN"
log "done in $(( $(date +%s) - start ))s"
echo "$CONTROL_PLANE_BIN"
