#!/usr/bin/env bash
# make demo: builds what it needs, starts the local stack (control plane, AWS simulator, controller), applies the
# example NodePool + EC2NodeClass and a 20-pod Deployment, shows progress and prints a summary.
set -euo pipefail
# shellcheck source=stack-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/stack-common.sh"
cd "$repo_root"
export GOFLAGS="${GOFLAGS:--mod=mod}"

echo "==> building the control plane binaries (cached in $(dirname "$CONTROL_PLANE_BIN"); a cold build takes 15-25 minutes)"
bash hack/build-control-plane.sh >/dev/null
echo "==> building the demo driver"
go build -o "$BIN_DIR/dovetail-demo" ./hack/demo
echo "==> starting the local stack (state in $DOVETAIL_STATE)"
bash hack/stack-up.sh
mkdir -p "$BIN_DIR/kube"; ln -sf "$CONTROL_PLANE_BIN/kubectl" "$BIN_DIR/kube/kubectl"
"$BIN_DIR/dovetail-demo" --kubeconfig "$KUBECONFIG_PATH" "$@"
echo "  (kubectl is at bin/kube/kubectl: export PATH=\$PWD/bin/kube:\$PATH)"
