#!/usr/bin/env bash
# Starts the whole local stack: the control plane (hack/cluster-up.sh), Dovetail's CRDs, the AWS simulator
# (bin/awssim) and the controller (bin/dovetail) pointed at the simulator through AWS_ENDPOINT_URL only.
# Expects bin/ to be built (make build). DOVETAIL_CONTROLLER=none starts everything but the controller (to run
# another controller, such as Karpenter's, on the stack). Writes $DOVETAIL_STATE/stack/env with the variables to use it.
set -euo pipefail
# shellcheck source=stack-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/stack-common.sh"

for b in dovetail awssim dovetailctl; do
  [ -x "$BIN_DIR/$b" ] || { log "missing $BIN_DIR/$b: run 'make build'"; exit 1; }
done
bash "$repo_root/hack/cluster-up.sh" >/dev/null
kubectl="$(bash "$repo_root/hack/build-control-plane.sh")/kubectl --kubeconfig $KUBECONFIG_PATH"
mkdir -p "$STACK_PID_DIR" "$STACK_LOG_DIR"

log "installing CRDs"
$kubectl apply --server-side -f "$repo_root/config/crd" >/dev/null
# Poll rather than `kubectl wait`: that fails outright when it reads a CRD before the API server has written any
# status condition on it.
crd_deadline=$(( $(date +%s) + 60 ))
for crd in nodepools.karpenter.sh nodeclaims.karpenter.sh nodeoverlays.karpenter.sh ec2nodeclasses.karpenter.k8s.aws capacitybuffers.autoscaling.x-k8s.io; do
  until [ "$($kubectl get crd "$crd" -o jsonpath='{.status.conditions[?(@.type=="Established")].status}' 2>/dev/null)" = True ]; do
    if [ "$(date +%s)" -ge "$crd_deadline" ]; then log "CRD $crd not established after 60 s"; exit 1; fi
    sleep 0.2
  done
done

launch() { # name, command...
  local name=$1; shift
  setsid "$@" >"$STACK_LOG_DIR/$name.log" 2>&1 < /dev/null &
  echo $! > "$STACK_PID_DIR/$name.pid"
}
wait_for() { # what, seconds, command...
  local what=$1 secs=$2; shift 2
  local deadline=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ] || ! stack_pid_alive "$what"; then
      log "$what did not become healthy; last log lines:"; tail -n 30 "$STACK_LOG_DIR/$what.log" >&2 || true; exit 1
    fi
    sleep 0.2
  done
}

if [ -n "${AWSSIM_SHARED_ENDPOINT:-}" ]; then
  log "using the shared AWS simulator at $AWS_ENDPOINT"
  curl -sf --max-time 2 "$AWS_ENDPOINT/_awssim/healthz" >/dev/null || { log "no simulator answers at $AWS_ENDPOINT"; exit 1; }
elif ! stack_pid_alive awssim; then
  log "starting the AWS simulator on $AWS_ENDPOINT"
  launch awssim "$BIN_DIR/awssim" serve --listen "127.0.0.1:$AWSSIM_PORT" --kubeconfig "$KUBECONFIG_PATH" \
    --region us-west-2 --cluster-name "$CLUSTER_NAME" --cluster-endpoint "https://127.0.0.1:$APISERVER_PORT" \
    --cluster-ca-file "$CLUSTER_DIR/pki/ca.crt" ${AWSSIM_FLAGS:-}
  wait_for awssim 30 curl -sf --max-time 2 "$AWS_ENDPOINT/_awssim/healthz"
fi

cat > "$STACK_DIR/env" <<ENV
export KUBECONFIG=$KUBECONFIG_PATH
export AWS_ENDPOINT_URL=$AWS_ENDPOINT
export AWSSIM_ENDPOINT=$AWS_ENDPOINT
export AWS_REGION=us-west-2
export AWS_ACCESS_KEY_ID=123456789012
export AWS_SECRET_ACCESS_KEY=local-simulator
export AWS_EC2_METADATA_DISABLED=true
export CLUSTER_NAME=$CLUSTER_NAME
ENV
if [ "${DOVETAIL_CONTROLLER:-}" = none ]; then
  log "not starting the Dovetail controller (DOVETAIL_CONTROLLER=none)"
elif ! stack_pid_alive dovetail; then
  log "starting the Dovetail controller"
  # shellcheck disable=SC1091
  # MEMORY_LIMIT as the Helm chart sets it from the container's memory limit (here 192 MiB); DOVETAIL_GOMEMLIMIT
  # sets GOMEMLIMIT instead.
  launch dovetail env $(sed -n 's/^export //p' "$STACK_DIR/env") \
    CLUSTER_ENDPOINT="https://127.0.0.1:$APISERVER_PORT" METRICS_PORT="$DOVETAIL_METRICS_PORT" \
    HEALTH_PROBE_PORT="$DOVETAIL_HEALTH_PORT" DISABLE_LEADER_ELECTION=true MEMORY_LIMIT="${DOVETAIL_MEMORY_LIMIT:-192MiB}" \
    ${DOVETAIL_GOMEMLIMIT:+GOMEMLIMIT="$DOVETAIL_GOMEMLIMIT"} \
    ${DOVETAIL_ENV:-} "$BIN_DIR/dovetail"
  wait_for dovetail 60 curl -sf --max-time 2 "http://127.0.0.1:$DOVETAIL_HEALTH_PORT/readyz"
fi
log "stack ready: source $STACK_DIR/env"
