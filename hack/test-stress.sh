#!/usr/bin/env bash
# Runs the tests of every package that starts an AWS simulator, an HTTP test server or a kube-apiserver (envtest)
# STRESS_COUNT times (default 20) while CPU-bound busy loops (STRESS_LOAD of them, default one per CPU) compete for
# the machine. Any failure is a defect to find, not a flake to retry. See docs/testing.md.
#   STRESS_COUNT=5 STRESS_PKGS="./pkg/providers/aws" bash hack/test-stress.sh
#   STRESS_JOBS=2 bash hack/test-stress.sh   # two test binaries at once beside the busy loops: heavier, and shorter
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export GOFLAGS="${GOFLAGS:--mod=mod}"
count="${STRESS_COUNT:-20}"
load="${STRESS_LOAD:-$(nproc)}"
jobs="${STRESS_JOBS:-1}"
timeout="${STRESS_TIMEOUT:-120m}"
for v in count load jobs; do
	if ! [[ "${!v}" =~ ^[0-9]+$ ]]; then
		echo "hack/test-stress.sh: STRESS_${v^^}=${!v} is not a whole number" >&2
		exit 2
	fi
done
if ((count < 1 || jobs < 1)); then
	echo "hack/test-stress.sh: STRESS_COUNT and STRESS_JOBS must be at least 1" >&2
	exit 2
fi

# The settings are checked first: a typo fails at once, not after the control plane is built.
KUBEBUILDER_ASSETS="$(bash hack/build-control-plane.sh)"
export KUBEBUILDER_ASSETS

if [[ -n "${STRESS_PKGS:-}" ]]; then
	read -r -a pkgs <<<"$STRESS_PKGS"
else
	# Packages whose tests start a server: the simulator behind httptest, envtest's kube-apiserver, or one of
	# pkg/test's envs (test.StartEnv, test.StartControllerEnv, ...: envtest, with a manager for the latter).
	# The e2e, bench and chaos suites start whole stacks and have their own targets.
	mapfile -t pkgs < <(grep -rlE 'httptest\.NewServer|envtest\.|test\.Start[A-Za-z]*Env\(|StartControllerEnv\(|awssim\.New\(' \
		--include='*_test.go' api pkg cmd test/chart | xargs -n1 dirname | sort -u | sed 's|^|./|')
fi
echo "== stress: ${#pkgs[@]} packages, -count=${count}, -p ${jobs}, ${load} busy loops, -timeout ${timeout} a package"
printf '   %s\n' "${pkgs[@]}"

# Compile first, so the load does not slow the build and the timeouts measure the tests.
go test -count=1 -run '^$' "${pkgs[@]}" >/dev/null

busy=()
stop_load() {
	for pid in "${busy[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap stop_load EXIT
for ((i = 0; i < load; i++)); do
	yes >/dev/null &
	busy+=("$!")
done

start=$(date +%s)
status=0
go test -p "$jobs" -count="$count" -timeout "$timeout" "${pkgs[@]}" || status=$?
echo "== stress: $(( $(date +%s) - start ))s, exit status ${status}"
exit "$status"
