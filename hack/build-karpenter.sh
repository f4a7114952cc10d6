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

# Modules a release needs that the Go module proxy reachable here does not serve (403 "This module version is not
# available"), each with a version it does serve, used only when `go install` of the release fails. Only
# substitutions that cannot change the controller are listed: timestreamwrite is imported by pkg/aws/sdk.go for an
# interface type the controller never calls. v1.15.1 and v1.15.2 need sigs.k8s.io/karpenter v1.15.1, the core
# itself, which that proxy does not serve either: they build only where the proxy serves it.
substitutions() {
  case "$1" in
    v1.15.0) echo "github.com/aws/aws-sdk-go-v2/service/timestreamwrite v1.36.2" ;;
  esac
}

start=$(date +%s)
log "building karpenter-provider-aws $version cmd/controller into $bin (a cold build takes 6-10 minutes of CPU)"
# Its go.mod asks for a newer Go patch release than the local toolchain may be (v1.14.3 says go 1.26.10, v1.15.2
# go 1.26.11); the go command fetches that toolchain from the module proxy (module golang.org/toolchain).
# operator.Version is what the controller logs and reports in its metrics, as Karpenter's own release builds set it.
export GOTOOLCHAIN="${KARPENTER_GOTOOLCHAIN:-go1.26.11+auto}" GOFLAGS=-mod=mod CGO_ENABLED=0
ldflags="-s -w -X sigs.k8s.io/karpenter/pkg/operator.Version=${version#v}"
stage="$dir/bin.partial"
rm -rf "$stage"; mkdir -p "$stage"
# The module has no replace directives, so `go install module/cmd@version` works when the proxy serves every
# module it needs.
if ! GOBIN="$stage" go install -trimpath -ldflags "$ldflags" "github.com/aws/karpenter-provider-aws/cmd/controller@$version"; then
  subs=$(substitutions "$version")
  if [ -z "$subs" ]; then
    log "go install of karpenter-provider-aws $version failed (above) and no substitution is known for it"
    exit 1
  fi
  # A module of our own that requires the release and replaces what the proxy lacks.
  log "retrying with substitutes for modules the proxy does not serve: $(echo $subs)"
  work="$DOVETAIL_CACHE/karpenter/src/$version"
  mkdir -p "$work"
  gomod=$(cd "$work" && go mod download -json "github.com/aws/karpenter-provider-aws@$version" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  {
    echo "module dovetail.local/karpenter"
    echo
    grep -m1 '^go ' "$gomod"
    echo
    echo "require github.com/aws/karpenter-provider-aws $version"
    echo
    while read -r mod ver; do [ -n "$mod" ] && echo "replace $mod => $mod $ver"; done <<< "$subs"
  } > "$work/go.mod"
  printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/aws/karpenter-provider-aws/cmd/controller"\n' > "$work/tools.go"
  (cd "$work" && go get "github.com/aws/karpenter-provider-aws@$version" >/dev/null 2>&1 || true)
  (cd "$work" && go build -trimpath -tags tools -ldflags "$ldflags" -o "$stage/controller" github.com/aws/karpenter-provider-aws/cmd/controller)
fi
[ -x "$stage/controller" ] || { log "missing controller after build"; exit 1; }
mv "$stage/controller" "$bin"
rm -rf "$stage"
log "done in $(( $(date +%s) - start ))s"
echo "$bin"
