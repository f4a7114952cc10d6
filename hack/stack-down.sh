#!/usr/bin/env bash
# Stops the controllers and the AWS simulator started by hack/stack-up.sh or the tests, then the control plane.
set -euo pipefail
# shellcheck source=stack-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/stack-common.sh"
# Controllers the tests started themselves (test/e2e/framework: Karpenter, replicas) leave pid files too.
for f in "$STACK_PID_DIR"/*.pid; do
  name=$(basename "$f" .pid)
  case "$name" in dovetail|awssim|'*') continue ;; esac
  pid=$(cat "$f")
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
done
for name in dovetail awssim; do
  f="$STACK_PID_DIR/$name.pid"; [ -f "$f" ] || continue
  pid=$(cat "$f")
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
done
rm -rf "$STACK_DIR"
bash "$repo_root/hack/cluster-down.sh"
