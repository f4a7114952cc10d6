# Settings of the whole local stack (cluster + AWS simulator + controller). Sourced, not run.
# shellcheck source=cluster-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/cluster-common.sh"
STACK_DIR="$DOVETAIL_STATE/stack"
STACK_PID_DIR="$STACK_DIR/pids"
STACK_LOG_DIR="$STACK_DIR/logs"
AWSSIM_PORT=$((PORT_BASE + 66))
DOVETAIL_METRICS_PORT=$((PORT_BASE + 88))
DOVETAIL_HEALTH_PORT=$((PORT_BASE + 89))
CLUSTER_NAME="${CLUSTER_NAME:-dovetail}"
# AWSSIM_SHARED_ENDPOINT points this stack at a simulator another stack runs (two clusters in one simulated
# account, test/e2e/twocluster): stack-up.sh then starts no simulator of its own.
AWS_ENDPOINT="${AWSSIM_SHARED_ENDPOINT:-http://127.0.0.1:$AWSSIM_PORT}"
BIN_DIR="${BIN_DIR:-$repo_root/bin}"
stack_pid_alive() { local f="$STACK_PID_DIR/$1.pid"; [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null; }
