#!/usr/bin/env bash
# Runs every test: unit and envtest packages, the upstream-plugin scheduling oracle (test/oracle), the Karpenter
# settings oracle (test/karpenter/settings), the chart against Karpenter's chart (test/karpenterchart), the CRDs
# against Karpenter v1.15.0's (test/karpentercrds), then the end-to-end tests on a local stack of their own.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export GOFLAGS="${GOFLAGS:--mod=mod}"
KUBEBUILDER_ASSETS="$(bash hack/build-control-plane.sh)"
export KUBEBUILDER_ASSETS
echo "== verify (generated files, gofmt, go vet, go.mod)"
bash hack/verify.sh
echo "== unit and envtest tests"
go test -count 1 -timeout 20m ./...
bash hack/test-oracle.sh
bash hack/test-karpenter-oracle.sh
bash hack/test-karpenter-chart.sh
bash hack/test-karpenter-crds.sh
echo "== Karpenter's own controller for test/e2e/karpenter (built once, cached)"
bash hack/build-karpenter.sh
echo "== end-to-end tests (local cluster + AWS simulator + controller)"
go test -tags e2e -p 1 -count 1 -timeout 30m ./test/e2e/...
echo "== chaos, short (3 rounds of controller kills, and the leader-election takeover; make test-chaos runs 30)"
CHAOS_ROUNDS=3 go test -tags chaos -p 1 -count 1 -timeout 15m -v -run 'TestChaos|TestLeaderElection' ./test/chaos/
