#!/usr/bin/env bash
# Copies the generated CRDs (config/crd/*.yaml) into the Helm chart (charts/dovetail/crds/), removing CRDs that
# no longer exist, so the chart installs exactly what `make generate` produced. `make generate` runs it after
# hack/generate.sh; test/chart fails when the two folders differ.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

src=config/crd
dst=charts/dovetail/crds
shopt -s nullglob
crds=("$src"/*.yaml)
if [ ${#crds[@]} -eq 0 ]; then
  echo "sync-chart-crds: no CRDs in $src: run hack/generate.sh first" >&2
  exit 1
fi
mkdir -p "$dst"
for f in "$dst"/*.yaml; do
  [ -e "$src/$(basename "$f")" ] || rm -f "$f"
done
for f in "${crds[@]}"; do
  cmp -s "$f" "$dst/$(basename "$f")" || cp "$f" "$dst/"
done
