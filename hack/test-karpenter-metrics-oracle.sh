#!/usr/bin/env bash
# Runs the Karpenter metrics oracle (test/karpenter/catalog, a nested Go module on Karpenter v1.14's packages): every
# metric pkg/metrics's catalog calls the same as Karpenter's must have Karpenter's type and label names; the
# Karpenter metrics Dovetail does not register are listed in the log (-v). Extra arguments go to go test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../test/karpenter/catalog"
export GOFLAGS="${GOFLAGS:--mod=mod}"
go test -count 1 -timeout 20m "$@" ./...
