#!/usr/bin/env bash
# Runs the provisioning scheduler benchmark (mixed workload at 1,000 / 5,000 / 20,000 / 50,000 pods against 384
# instance types), with every plan checked by the oracle. Each size runs in its own process so peak RSS is per size.
# Usage: hack/bench-scheduling.sh [extra go test flags]
set -euo pipefail
cd "$(dirname "$0")/.."
for n in 1000 5000 20000 50000; do
	go test ./pkg/scheduling/ -run '^$' -bench "^BenchmarkScheduling/${n}\$" -benchtime 1x -count 1 "$@" | grep -E '^(Benchmark|---|\s+bench_test)' || true
done
