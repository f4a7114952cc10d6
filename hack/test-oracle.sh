#!/usr/bin/env bash
# Runs the upstream-plugin scheduling oracle (test/oracle, a nested Go module on k8s.io/kubernetes): every placement
# of 10,000 seeded random plans and of the 1k/5k benchmark plans must pass the kube-scheduler's own filter plugins,
# and every claim pod of 500 random claim workloads its DynamicResources plugin.
# Extra arguments go to go test (e.g. -short, -run TestCheckFindsViolations). DOVETAIL_ORACLE_CASES sets the number
# of random cases. The first build of k8s.io/kubernetes' scheduler packages takes several minutes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../test/oracle"
export GOFLAGS="${GOFLAGS:--mod=mod}"
echo "== scheduling oracle: upstream kube-scheduler filters on ${DOVETAIL_ORACLE_CASES:-10000} random plans and the benchmark plans (test/oracle)"
start=$(date +%s)
go test -count 1 -timeout 30m -v "$@" ./... || { echo "oracle: FAILED after $(($(date +%s) - start))s" >&2; exit 1; }
echo "oracle: ok in $(($(date +%s) - start))s"
