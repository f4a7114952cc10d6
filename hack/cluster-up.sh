#!/usr/bin/env bash
# Starts a local Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kwok (fake kubelets for the Nodes the AWS simulator creates). Builds the binaries once
# (cached outside the clone), writes $DOVETAIL_STATE/cluster/kubeconfig and waits until everything is healthy.
# Safe to run twice: a healthy running cluster is left as it is.
set -euo pipefail
# shellcheck source=cluster-common.sh
source "$(dirname "${BASH_SOURCE[0]}")/cluster-common.sh"

components=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
all_alive() { for c in "${components[@]}"; do pid_alive "$c" || return 1; done; }

if all_alive && [ -f "$KUBECONFIG_PATH" ]; then
  log "cluster already running (kubeconfig $KUBECONFIG_PATH)"
  echo "$KUBECONFIG_PATH"; exit 0
fi
if [ -d "$PID_DIR" ]; then
  log "found a partly running cluster in $CLUSTER_DIR; stopping it first"
  bash "$repo_root/hack/cluster-down.sh"
fi

bin="$(bash "$repo_root/hack/build-control-plane.sh")"
start=$(date +%s)
mkdir -p "$CLUSTER_DIR"/{pki,etcd,kwok-home} "$PID_DIR" "$LOG_DIR"
pki="$CLUSTER_DIR/pki"

# --- certificates: a CA, the apiserver's serving cert, an admin client cert, the service-account key pair.
if [ ! -f "$pki/admin.crt" ]; then
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj "/CN=dovetail-local-ca" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n' > apiserver.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 3650 -extfile apiserver.ext 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=dovetail-admin" 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' > admin.ext
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out admin.crt -days 3650 -extfile admin.ext 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
fi
b64() { base64 -w0 < "$1"; }
cat > "$KUBECONFIG_PATH" <<KC
apiVersion: v1
kind: Config
clusters:
- name: dovetail-local
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(b64 "$pki/ca.crt")
users:
- name: dovetail-admin
  user:
    client-certificate-data: $(b64 "$pki/admin.crt")
    client-key-data: $(b64 "$pki/admin.key")
contexts:
- name: dovetail-local
  context: {cluster: dovetail-local, user: dovetail-admin}
current-context: dovetail-local
KC

launch() { # name, command...
  local name=$1; shift
  setsid "$@" >"$LOG_DIR/$name.log" 2>&1 < /dev/null &
  echo $! > "$PID_DIR/$name.pid"
}
wait_for() { # what, seconds, command...
  local what=$1 secs=$2; shift 2
  local deadline=$(( $(date +%s) + secs ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "timed out after ${secs}s waiting for $what; last log lines:"
      tail -n 20 "$LOG_DIR/${what%% *}.log" >&2 2>/dev/null || true
      exit 1
    fi
    sleep 0.2
  done
}
curl_admin() { curl -sf --max-time 2 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "$@"; }

log "starting etcd on 127.0.0.1:$ETCD_PORT"
launch etcd "$bin/etcd" --name dovetail --data-dir "$CLUSTER_DIR/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "dovetail=http://127.0.0.1:$ETCD_PEER_PORT" --unsafe-no-fsync --quota-backend-bytes 4294967296
wait_for "etcd" 30 curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health"

# KEP-5278 (alpha in 1.34): the kube-scheduler tries a pending pod's status.nominatedNodeName first and keeps room
# there for it; Dovetail nominates pods whose planned node exists (docs/provisioning.md). The API server clears
# the nomination when the pod is bound.
# DRAPartitionableDevices (alpha in 1.34): the API server keeps, and the kube-scheduler's DRA plugin honours, the
# shared counters of partitionable devices (a GPU and its MIG partitions, docs/simulator.md).
feature_gates=NominatedNodeNameForExpectation=true,ClearingNominatedNodeNameAfterBinding=true,DRAPartitionableDevices=true
# Dual-stack services: Services are IPv4 unless they ask for IPv6, as the IPv6 cluster scenario's kube-dns
# Service does (test/e2e/ipv6).
log "starting kube-apiserver on https://127.0.0.1:$APISERVER_PORT"
launch kube-apiserver "$bin/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
  --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" --client-ca-file "$pki/ca.crt" \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
  --service-cluster-ip-range 10.96.0.0/16,fd00:10:96::/108 --authorization-mode RBAC --endpoint-reconciler-type none \
  --allow-privileged=true --enable-priority-and-fairness=false --max-requests-inflight 2000 \
  --max-mutating-requests-inflight 1000 --cert-dir "$pki" --profiling=false --feature-gates "$feature_gates"
wait_for "kube-apiserver" 60 curl_admin "https://127.0.0.1:$APISERVER_PORT/readyz"

log "starting kube-controller-manager, kube-scheduler and kwok"
# The control plane shares 2 cores with everything else here, so the stack spares it work a real cluster's larger
# control plane absorbs (measured in a 1,100-pod scale-out, docs/local-cluster.md): the ttl-controller (it
# annotates every Node again each time the cluster passes 100, 500, 1,000 nodes; kwok's kubelets cache nothing)
# is off, and kwok renews each Node's lease every 40 s instead of 10 s (a 160 s lease; the controller-manager
# marks a Node whose lease lapsed NotReady after 200 s instead of 50 s). ReplicaSets sync 20 at a time, not 5: a
# ReplicaSet adopts its pods one patch after another, and bench-scale's 50 adopting 50,000 pods went at 45 a second.
launch kube-controller-manager "$bin/kube-controller-manager" \
  --kubeconfig "$KUBECONFIG_PATH" --authentication-kubeconfig "$KUBECONFIG_PATH" --authorization-kubeconfig "$KUBECONFIG_PATH" \
  --bind-address 127.0.0.1 --secure-port "$KCM_PORT" --leader-elect=false \
  --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
  --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
  --use-service-account-credentials=false --kube-api-qps 200 --kube-api-burst 400 --controllers '*,-ttl-controller' \
  --node-monitor-grace-period 200s --concurrent-replicaset-syncs 20
# DOVETAIL_KUBE_SCHEDULER_CONFIG, when set, is more of the KubeSchedulerConfiguration (for example profiles with
# podTopologySpread default constraints, as a cluster given Dovetail's SCHEDULER_CONFIG would run).
cat > "$CLUSTER_DIR/scheduler.yaml" <<SC
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: "$KUBECONFIG_PATH", qps: 500, burst: 1000}
leaderElection: {leaderElect: false}
${DOVETAIL_KUBE_SCHEDULER_CONFIG:-}
SC
launch kube-scheduler "$bin/kube-scheduler" --config "$CLUSTER_DIR/scheduler.yaml" \
  --authentication-kubeconfig "$KUBECONFIG_PATH" --authorization-kubeconfig "$KUBECONFIG_PATH" \
  --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT" --feature-gates "$feature_gates"
# kwok plays 4 pod stages at a time by default: too few to take 1,000 pods to Running within seconds.
{
  cat <<KC
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: 32
  nodePlayStageParallelism: 16
  nodeLeaseParallelism: 16
---
KC
  cat "$repo_root/hack/kwok/stages.yaml"
} > "$CLUSTER_DIR/kwok.yaml"
# --cidr: the pod IPs kwok hands out. Its pool does not stop at the range's end and drops addresses past it when
# pods go: a /16 ran out at about 43,000 pods of a 5,000-node bench-scale and kwok then failed every status patch
# of the rest (two pod IPs of one family). A /10 holds 4 million.
launch kwok env HOME="$CLUSTER_DIR/kwok-home" "$bin/kwok" --kubeconfig "$KUBECONFIG_PATH" --config "$CLUSTER_DIR/kwok.yaml" \
  --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
  --node-ip 127.0.0.1 --cidr 100.64.0.0/10 --node-lease-duration-seconds 160 --server-address "127.0.0.1:$KWOK_PORT"

wait_for "kube-controller-manager" 60 curl -skf --max-time 2 "https://127.0.0.1:$KCM_PORT/healthz"
wait_for "kube-scheduler" 60 curl -skf --max-time 2 "https://127.0.0.1:$SCHEDULER_PORT/healthz"
wait_for "kwok" 60 curl -sf --max-time 2 "http://127.0.0.1:$KWOK_PORT/healthz"
# Pods are admitted only once the controller-manager has created the namespace's default service account.
wait_for "kube-controller-manager (default service account)" 60 curl_admin "https://127.0.0.1:$APISERVER_PORT/api/v1/namespaces/default/serviceaccounts/default"
log "cluster healthy in $(( $(date +%s) - start ))s; export KUBECONFIG=$KUBECONFIG_PATH"
echo "$KUBECONFIG_PATH"
