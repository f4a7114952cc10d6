#!/usr/bin/env bash
# Stops exactly the processes hack/cluster-up.sh started (by pid file) and removes the cluster's state.
set -euo pipefail
# shellcheck source=cluster-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/cluster-common.sh"

if [ -d "$PID_DIR" ]; then
  for f in "$PID_DIR"/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    # setsid made each component a process-group leader: signal the group so wrappers and children go too.
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  done
  for f in "$PID_DIR"/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$pid" 2>/dev/null || true
  done
fi
rm -rf "$CLUSTER_DIR"
log "cluster stopped; state removed ($CLUSTER_DIR)"
