#!/usr/bin/env bash
# Fails when generated files (api/, config/, the chart's CRDs, docs/reference) drift from their sources, when a
# link or `make` target in README.md or docs/ is broken, when Go files are not gofmt'ed, or when go vet complains.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export GOFLAGS="${GOFLAGS:--mod=mod}"
fail=0
bash hack/generate.sh
bash hack/sync-chart-crds.sh
if ! git diff --exit-code --stat -- api config charts docs/reference docs/metrics.md; then
  echo "verify: generated files are out of date; run 'make generate' and commit the result" >&2; fail=1
fi
untracked=$(git ls-files --others --exclude-standard -- api config docs/reference)
if [ -n "$untracked" ]; then
  echo "verify: generated files not committed:" >&2; echo "$untracked" >&2; fail=1
fi
go run ./hack/linkcheck -root . || { echo "verify: broken links or make targets in README.md or docs/ (above)" >&2; fail=1; }
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "verify: not gofmt'ed (run gofmt -w):" >&2; echo "$unformatted" >&2; fail=1
fi
go vet ./... || { echo "verify: go vet failed" >&2; fail=1; }
go vet -tags e2e ./test/e2e/... && go vet -tags bench ./test/bench/... && go vet -tags chaos ./test/chaos/... || { echo "verify: go vet (e2e, bench, chaos) failed" >&2; fail=1; }
go mod tidy -diff >/dev/null || { echo "verify: go.mod/go.sum are not tidy (run go mod tidy)" >&2; fail=1; }
[ $fail -eq 0 ] && echo "verify: ok"
exit $fail
