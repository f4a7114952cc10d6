#!/usr/bin/env bash
# Runs the provisioning scheduler benchmark (mixed workload at 1,000 / 5,000 / 20,000 / 50,000 pods against 384
# instance types), with every plan checked by the oracle. Each size runs in its own process so peak RSS is per size.
# The raw output (with date, machine and load average) goes to docs/img/scheduling-bench.txt, the plot of time vs
# pod count to docs/img/scheduling-time.svg, and a Markdown table for docs/benchmarks.md to stdout.
# Usage: hack/bench-scheduling.sh [extra go test flags]
# Env: SIZES (default "1000 5000 20000 50000"), BENCH_OUT (raw output file), BENCH_SVG (plot file).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_OUT:-docs/img/scheduling-bench.txt}
svg=${BENCH_SVG:-docs/img/scheduling-time.svg}
mkdir -p "$(dirname "$out")" "$(dirname "$svg")"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
	echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "# machine: $(nproc) cpu, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')"
	echo "# go: $(go env GOVERSION)"
} >"$tmp"
for n in ${SIZES:-1000 5000 20000 50000}; do
	echo "# load before ${n}: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$tmp"
	go test ./pkg/scheduling/ -run '^$' -bench "^BenchmarkScheduling/${n}\$" -benchtime 1x -count 1 "$@" |
		grep -E '^(Benchmark|---|\s+bench_test)' | tee -a "$tmp" || true
done
cat "$tmp" >"$out"
go run ./hack/benchplot -in "$out" -svg "$svg"
