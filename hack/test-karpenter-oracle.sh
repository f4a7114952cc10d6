#!/usr/bin/env bash
# Runs the Karpenter settings oracle (test/karpenter/settings, a nested Go module on Karpenter's own option
# packages): every Karpenter v1.14 flag, its environment variable and its default must be a Dovetail setting with the
# same names and default, validation must agree, and the settings Karpenter v1.15 added are checked against a list
# written from its source. Extra arguments go to go test. The first build of Karpenter's packages takes minutes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../test/karpenter/settings"
export GOFLAGS="${GOFLAGS:--mod=mod}"
echo "== Karpenter settings oracle: Karpenter's option flag sets against Dovetail's settings (test/karpenter/settings)"
start=$(date +%s)
go test -count 1 -timeout 20m "$@" ./... || { echo "karpenter settings oracle: FAILED after $(($(date +%s) - start))s" >&2; exit 1; }
echo "karpenter settings oracle: ok in $(($(date +%s) - start))s"
