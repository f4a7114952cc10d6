package disruption

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
)

// watchedKinds are what restKey fingerprints, for the controller's deps.ChangeCount: NodeClaims, pods, NodePools
// and PodDisruptionBudgets at every new resource version, Nodes only when what a decision reads of them changes
// (not at heartbeats). With no change counted since a decision at rest, a pass need not even list the cache: at
// 5,000 nodes and 50,000 pods listing and fingerprinting every 10 s copied the pod structs and deep copied the
// NodeClaims for nothing.
func watchedKinds() []deps.Watched {
	return []deps.Watched{
		{Object: &karpv1.NodeClaim{}},
		{Object: &corev1.Pod{}},
		{Object: &karpv1.NodePool{}},
		{Object: &policyv1.PodDisruptionBudget{}},
		{Object: &corev1.Node{}, Relevant: nodeChanged},
	}
}

// nodeChanged reports an update that changes what restKey reads of a Node (decisionFieldsEqual).
func nodeChanged(old, cur any) bool {
	o, ok1 := old.(*corev1.Node)
	n, ok2 := cur.(*corev1.Node)
	return !ok1 || !ok2 || !decisionFieldsEqual(o, n)
}

// decisionFieldsEqual reports whether two versions of a Node agree on what restKey reads of it: identity, labels,
// annotations, taints, schedulability, allocatable and condition statuses. It runs at every Node update (each
// heartbeat of every node) and allocates nothing.
func decisionFieldsEqual(a, b *corev1.Node) bool {
	if a.Name != b.Name || a.UID != b.UID || a.Spec.ProviderID != b.Spec.ProviderID || a.Spec.Unschedulable != b.Spec.Unschedulable ||
		!maps.Equal(a.Labels, b.Labels) || !maps.Equal(a.Annotations, b.Annotations) ||
		!slices.EqualFunc(a.Spec.Taints, b.Spec.Taints, func(x, y corev1.Taint) bool {
			return x.Key == y.Key && x.Value == y.Value && x.Effect == y.Effect
		}) ||
		!slices.EqualFunc(a.Status.Conditions, b.Status.Conditions, func(x, y corev1.NodeCondition) bool {
			return x.Type == y.Type && x.Status == y.Status
		}) ||
		len(a.Status.Allocatable) != len(b.Status.Allocatable) {
		return false
	}
	for name, q := range a.Status.Allocatable {
		r, ok := b.Status.Allocatable[name]
		if !ok || q.Cmp(r) != 0 || q.Format != r.Format { // the same value and format print the same (restKey)
			return false
		}
	}
	return true
}
