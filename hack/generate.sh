#!/usr/bin/env bash
# Regenerates deepcopy functions and CRD manifests from the API types in api/. Deterministic: running it
# twice leaves the tree unchanged. `make generate` calls it; `make verify` runs it and checks git diff.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

go tool controller-gen object paths=./api/...
rm -f config/crd/*.yaml
go tool controller-gen crd paths=./api/... output:crd:artifacts:config=config/crd
go run ./hack/crdpatch config/crd
