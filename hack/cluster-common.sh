# Shared settings of the local cluster scripts. Sourced, not run.
# State lives in $DOVETAIL_STATE (default: <repo>/.dovetail); ports start at $DOVETAIL_PORT_BASE (default 16400),
# so a second stack (e.g. the e2e tests) can run beside the demo with another state folder and port base.
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=control-plane-versions.sh
source "$repo_root/hack/control-plane-versions.sh"
DOVETAIL_STATE="${DOVETAIL_STATE:-$repo_root/.dovetail}"
CLUSTER_DIR="$DOVETAIL_STATE/cluster"
PORT_BASE="${DOVETAIL_PORT_BASE:-16400}"
APISERVER_PORT=$((PORT_BASE + 43))
ETCD_PORT=$((PORT_BASE + 79))
ETCD_PEER_PORT=$((PORT_BASE + 80))
KCM_PORT=$((PORT_BASE + 57))
SCHEDULER_PORT=$((PORT_BASE + 59))
KWOK_PORT=$((PORT_BASE + 81))
KUBECONFIG_PATH="$CLUSTER_DIR/kubeconfig"
PID_DIR="$CLUSTER_DIR/pids"
LOG_DIR="$CLUSTER_DIR/logs"

log() { echo "[$(date +%H:%M:%S)] $*" >&2; }
pid_alive() { local f="$PID_DIR/$1.pid"; [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; }
