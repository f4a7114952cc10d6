#!/usr/bin/env bash
# Runs the Karpenter metrics oracles (test/karpenter/metrics for v1.14, test/karpenter/metrics/v115 for v1.15:
# nested Go modules on Karpenter's own packages): the committed list
# test/karpenter/metrics/testdata/karpenter-metrics.json must be every metric Karpenter registers, with its type and
# label names. Then the dashboard queries (test/dashboards, a nested module on Prometheus's query engine) must all
# return data on scrapes of the controller: the committed test/dashboards/testdata/scrapes.prom.gz, or the scrapes
# file given as the first argument (then the oracles are skipped; hack/test.sh passes the file the end-to-end test
# TestKarpenterMetricsScraped just wrote). The first build of Karpenter's packages takes minutes.
# KARPENTER_METRICS_V115=1 also runs the v1.15 oracle. KARPENTER_METRICS_UPDATE=1 rewrites the committed list from Karpenter's packages instead of comparing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export GOFLAGS="${GOFLAGS:--mod=mod}"
scrapes="${1:-}"
start=$(date +%s)
fail=0
if [ -z "$scrapes" ]; then
  echo "== Karpenter metrics oracle: the committed metric list against Karpenter's own packages (test/karpenter/metrics)"
  # Karpenter v1.14.3's modules need Go 1.26.10; the toolchain comes from the Go module proxy as for hack/build-karpenter.sh.
  # The v1.15 oracle compiles a second copy of Karpenter for a list that cannot change (v1.15.0 is fixed): it runs when
  # KARPENTER_METRICS_V115=1 (make test-metrics sets it), not in every make test.
  mods="test/karpenter/metrics"
  [ "${KARPENTER_METRICS_V115:-0}" = 1 ] && mods="$mods test/karpenter/metrics/v115"
  for m in $mods; do
    (cd "$root/$m" && GOTOOLCHAIN="${KARPENTER_GOTOOLCHAIN:-go1.26.11+auto}" go test -count 1 -timeout 20m ./...) || fail=1
  done
fi
echo "== dashboard queries on ${scrapes:-the committed scrapes (test/dashboards/testdata/scrapes.prom.gz)}"
if [ -n "$scrapes" ]; then
  scrapes="$(cd "$(dirname "$scrapes")" && pwd)/$(basename "$scrapes")"
fi
(cd "$root/test/dashboards" && DOVETAIL_METRICS_SCRAPES="$scrapes" go test -count 1 -timeout 10m ./...) || fail=1
if [ $fail -ne 0 ]; then
  echo "karpenter metrics and dashboards: FAILED after $(($(date +%s) - start))s" >&2; exit 1
fi
echo "karpenter metrics and dashboards: ok in $(($(date +%s) - start))s"
