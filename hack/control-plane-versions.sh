# Pinned versions of the local control plane. Sourced by the hack/ scripts.
# Changing a version changes the cache key, so a new set of binaries is built once.
KUBE_VERSION=v1.34.4
ETCD_VERSION=v3.6.5
KWOK_VERSION=v0.8.0
DOVETAIL_CACHE="${DOVETAIL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dovetail}"
CONTROL_PLANE_BIN="${CONTROL_PLANE_BIN:-$DOVETAIL_CACHE/control-plane/kube-${KUBE_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}/bin}"
