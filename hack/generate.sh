#!/usr/bin/env bash
# Regenerates deepcopy functions and CRD manifests from the API types in api/, and the reference pages of
# docs/reference from the code. Deterministic: running it twice leaves the tree unchanged. `make generate` calls
# it; `make verify` runs it and checks git diff.
#   1. controller-gen writes api/*/v1/zz_generated.deepcopy.go and config/crd/<group>_<plural>.yaml;
#   2. hack/crdpatch adds the schema rules controller-gen cannot express (fields of embedded core types);
#   3. hack/generate-docs.sh writes docs/reference (settings, Helm values, CLI).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

rm -f config/crd/*.yaml
go tool controller-gen object crd paths=./api/... output:crd:artifacts:config=config/crd
go run ./hack/crdpatch config/crd
bash hack/generate-docs.sh
go run ./hack/metricsdoc docs/metrics.md  # docs/metrics.md from pkg/metrics
