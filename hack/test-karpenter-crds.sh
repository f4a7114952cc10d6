#!/usr/bin/env bash
# Compares config/crd with Karpenter v1.15.0's CRDs (test/karpentercrds, a nested Go module): Karpenter's CRDs are
# read from the github.com/aws/karpenter-provider-aws module on the Go module proxy, and every schema difference
# must be listed with its reason in test/karpentercrds/crds_test.go. Extra arguments go to go test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../test/karpentercrds"
export GOFLAGS="${GOFLAGS:--mod=mod}"
echo "== config/crd against Karpenter v1.15.0's CRDs (test/karpentercrds)"
go test -count 1 "$@" ./...
