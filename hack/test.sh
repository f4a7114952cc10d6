#!/usr/bin/env bash
# Runs every test: unit and envtest packages, the upstream-plugin scheduling oracle (test/oracle), the Karpenter
# settings oracle (test/karpenter/settings), the Karpenter metrics oracle and dashboard queries (test/karpenter/metrics,
# test/dashboards), the chart against Karpenter's chart (test/karpenterchart), the CRDs against Karpenter v1.15.0's
# (test/karpentercrds), then the end-to-end tests on a local stack of their own, and the dashboard queries again on
# the scrapes the end-to-end test took.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export GOFLAGS="${GOFLAGS:--mod=mod}"
# stage prints a stage's header with the seconds since the run started, so a slow run shows where its time went.
stage() { echo "== [${SECONDS}s] $*"; }
trap 'echo "make test: ${SECONDS}s in all"' EXIT
KUBEBUILDER_ASSETS="$(bash hack/build-control-plane.sh)"
export KUBEBUILDER_ASSETS
stage "verify (generated files, gofmt, go vet, go.mod)"
bash hack/verify.sh
stage "unit and envtest tests"
go test -count 1 -timeout 20m ./...
stage "oracles: scheduling, Karpenter settings, metrics, chart and CRDs"
bash hack/test-oracle.sh
bash hack/test-karpenter-oracle.sh
# A metric gap fails the run at the end, after every other test has run.
metrics_failed=0
bash hack/test-karpenter-metrics.sh || metrics_failed=1
bash hack/test-karpenter-chart.sh
bash hack/test-karpenter-crds.sh
stage "Karpenter's own controller for test/e2e/karpenter (built once, cached)"
bash hack/build-karpenter.sh
stage "end-to-end tests (local cluster + AWS simulator + controller)"
scrapes="$(mktemp -d)/metrics-scrapes.prom"
e2e_failed=0
DOVETAIL_METRICS_SCRAPES_OUT="$scrapes" go test -tags e2e -p 1 -count 1 -timeout 50m ./test/e2e/... || e2e_failed=1
if [ -f "$scrapes" ]; then
  stage "dashboard queries on the end-to-end test's scrapes"
  bash hack/test-karpenter-metrics.sh "$scrapes" || metrics_failed=1
fi
stage "chaos, short (3 rounds of controller kills, and the leader-election takeover; make test-chaos runs 30)"
CHAOS_ROUNDS=3 go test -tags chaos -p 1 -count 1 -timeout 15m -v -run 'TestChaos|TestLeaderElection' ./test/chaos/
[ $e2e_failed -eq 0 ] || { echo "make test: end-to-end tests failed (see above)" >&2; exit 1; }
if [ $metrics_failed -ne 0 ]; then
  echo "make test: the Karpenter metrics oracle or the dashboard queries failed (see above)" >&2; exit 1
fi
