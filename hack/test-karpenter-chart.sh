#!/usr/bin/env bash
# Compares charts/dovetail with Karpenter's own chart (test/karpenterchart, a nested Go module): Karpenter's chart is
# read from the github.com/aws/karpenter-provider-aws module on the Go module proxy and rendered with Helm's engine
# beside ours. Extra arguments go to go test (e.g. -run TestRendersLikeKarpenter).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../test/karpenterchart"
export GOFLAGS="${GOFLAGS:--mod=mod}"
echo "== charts/dovetail against Karpenter's chart (test/karpenterchart)"
go test -count 1 "$@" ./...
