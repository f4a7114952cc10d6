#!/usr/bin/env bash
# Writes the generated reference pages of docs/reference from the code; hack/generate.sh runs it, so `make
# generate` refreshes them and `make verify` fails when they drift.
#   docs/reference/settings.md     every controller setting and feature gate (pkg/settings), by hack/docgen;
#   docs/reference/helm-values.md  every value of charts/dovetail/values.yaml with its comment, by hack/docgen;
#   docs/reference/cli/            every command and flag of dovetailctl and awssim (their hidden gen-docs command).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

go run ./hack/docgen -root .
rm -rf docs/reference/cli
# The CLIs take some flag defaults from the environment; the reference shows the defaults of an empty one.
clean_env=(env -u AWSSIM_ENDPOINT -u CLUSTER_NAME -u INTERRUPTION_QUEUE -u LEADER_ELECTION_NAME
  -u LEADER_ELECTION_NAMESPACE -u AWS_REGION -u KUBECONFIG)
"${clean_env[@]}" go run ./cmd/dovetailctl gen-docs docs/reference/cli
"${clean_env[@]}" go run ./cmd/awssim gen-docs docs/reference/cli
