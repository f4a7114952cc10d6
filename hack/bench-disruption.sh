#!/usr/bin/env bash
# Runs the disruption benchmarks on the scaled-in cluster (20,000 pods of the scheduling benchmark mix placed on
# 2,000 nodes, then 60% of the pods removed at random): the convergence simulation of the controller's loop, then
# one full decision pass (CPU time and peak RSS), each in its own process. The raw output (date, machine, load)
# goes to docs/img/disruption-bench.txt; the last line is the decision pass's:
#   disruption: nodes=2000 pods=N decide_cpu_s=X peak_rss_mib=Y savings_per_h=Z evictions=E
# Usage: hack/bench-disruption.sh [extra go test flags]
# Env: BENCH_OUT (raw output file).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${BENCH_OUT:-docs/img/disruption-bench.txt}
mkdir -p "$(dirname "$out")"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
	echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "# machine: $(nproc) cpu, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')"
	echo "# go: $(go env GOVERSION)"
} >"$tmp"
for b in Converge Decide; do
	echo "# load before ${b}: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$tmp"
	go test ./pkg/disruption/ -run '^$' -bench "^Benchmark${b}\$" -benchtime 1x -count 1 -timeout 60m "$@" |
		grep -E '^(#|convergence:|disruption:|---|\s+bench_test)' >>"$tmp" || true
done
cp "$tmp" "$out"
grep -v -E '^(convergence|disruption):' "$tmp"
grep -E '^convergence:' "$tmp" || echo "convergence: failed (see $out)"
grep -E '^disruption:' "$tmp" || echo "disruption: failed (see $out)"
