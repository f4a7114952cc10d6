#!/usr/bin/env bash
# Builds Karpenter's AWS controller (github.com/aws/karpenter-provider-aws/cmd/controller) from the Go module proxy
# and caches it outside the clone, keyed by version: the end-to-end tests run the real Karpenter on the local stack
# to check that Dovetail can take over a Karpenter cluster and hand it back.
# Usage: hack/build-karpenter.sh [version]   (default $KARPENTER_VERSION, else the pinned v1.14 release)
# Prints the binary's path on stdout. Safe to run concurrently: a lock serialises builders.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=control-plane-versions.sh
source "$here/control-plane-versions.sh"

version="${1:-${KARPENTER_VERSION:-v1.14.3}}"
case "$version" in v*) ;; *) version="v$version" ;; esac
dir="$DOVETAIL_CACHE/karpenter/$version"
bin="$dir/controller"
log() { echo "build-karpenter: $*" >&2; }

if [ -x "$bin" ]; then echo "$bin"; exit 0; fi

mkdir -p "$dir"
exec 9>"$DOVETAIL_CACHE/karpenter/.build.lock"
log "waiting for build lock"; flock 9
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi

start=$(date +%s)
log "building karpenter-provider-aws $version cmd/controller into $bin (a cold build takes about 15 minutes on 2 cores)"
# The module has no replace directives, so `go install module/cmd@version` works. Its go.mod asks for a newer Go
# patch release than the local toolchain may be (v1.14.3 says go 1.26.10, v1.15.2 go 1.26.11); GOTOOLCHAIN=auto lets
# the go command fetch that toolchain from the module proxy (module golang.org/toolchain) instead of refusing.
# operator.Version is what the controller logs and reports in its metrics, as Karpenter's own release builds set it.
stage="$dir/bin.partial"
rm -rf "$stage"; mkdir -p "$stage"
GOTOOLCHAIN="${KARPENTER_GOTOOLCHAIN:-go1.26.11+auto}" GOFLAGS=-mod=mod GOBIN="$stage" CGO_ENABLED=0 \
  go install -trimpath -ldflags "-s -w -X sigs.k8s.io/karpenter/pkg/operator.Version=${version#v}" \
  "github.com/aws/karpenter-provider-aws/cmd/controller@$version"
[ -x "$stage/controller" ] || { log "missing controller after build"; exit 1; }
mv "$stage/controller" "$bin"
rm -rf "$stage"
log "done in $(( $(date +%s) - start ))s"
echo "$bin"
