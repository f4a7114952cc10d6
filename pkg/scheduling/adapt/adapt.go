package adapt

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// NodePool converts a NodePool. usage is the capacity its existing and in-flight nodes hold plus a "nodes" count
// (scheduling.ResourceNodes); nil means none.
func NodePool(np *karpv1.NodePool, usage corev1.ResourceList) *scheduling.NodePool {
	out := &scheduling.NodePool{
		Name:          np.Name,
		Labels:        copyMap(np.Spec.Template.Labels),
		Taints:        append([]corev1.Taint(nil), np.Spec.Template.Spec.Taints...),
		StartupTaints: append([]corev1.Taint(nil), np.Spec.Template.Spec.StartupTaints...),
		Limits:        corev1.ResourceList(np.Spec.Limits).DeepCopy(),
		Usage:         usage.DeepCopy(),
	}
	if np.Spec.Weight != nil {
		out.Weight = *np.Spec.Weight
	}
	out.Requirements = Requirements(np.Spec.Template.Spec.Requirements)
	return out
}

// Requirements converts requirements with minValues.
func Requirements(in []karpv1.NodeSelectorRequirementWithMinValues) []scheduling.NodeSelectorRequirementWithMinValues {
	out := make([]scheduling.NodeSelectorRequirementWithMinValues, 0, len(in))
	for _, r := range in {
		c := scheduling.NodeSelectorRequirementWithMinValues{NodeSelectorRequirement: *r.NodeSelectorRequirement.DeepCopy()}
		if r.MinValues != nil {
			v := *r.MinValues
			c.MinValues = &v
		}
		out = append(out, c)
	}
	return out
}

// NodeClaimPlanRequirements converts a planned NodeClaim's requirements back to the API type.
func NodeClaimPlanRequirements(in []scheduling.NodeSelectorRequirementWithMinValues) []karpv1.NodeSelectorRequirementWithMinValues {
	out := make([]karpv1.NodeSelectorRequirementWithMinValues, 0, len(in))
	for _, r := range in {
		c := karpv1.NodeSelectorRequirementWithMinValues{NodeSelectorRequirement: *r.NodeSelectorRequirement.DeepCopy()}
		if r.MinValues != nil {
			v := *r.MinValues
			c.MinValues = &v
		}
		out = append(out, c)
	}
	return out
}

// Node converts a Node with the pods bound to it. Nodes being deleted or cordoned receive no pods.
func Node(node *corev1.Node, pods []*corev1.Pod) *scheduling.StateNode {
	return &scheduling.StateNode{
		Name:              node.Name,
		Labels:            copyMap(node.Labels),
		Taints:            append([]corev1.Taint(nil), node.Spec.Taints...),
		Allocatable:       node.Status.Allocatable.DeepCopy(),
		Pods:              pods,
		NodePool:          node.Labels[karpv1.NodePoolLabelKey],
		MarkedForDeletion: node.DeletionTimestamp != nil || node.Spec.Unschedulable,
	}
}

// InFlightNodeClaim converts a NodeClaim whose Node has not registered yet. Its labels are the single-valued
// requirements (instance type, zone and capacity type once launched) plus the template labels it carries; its
// allocatable is status.allocatable, or the requested resources before launch. Startup taints are left out.
func InFlightNodeClaim(nc *karpv1.NodeClaim) *scheduling.StateNode {
	labels := copyMap(nc.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	for _, r := range nc.Spec.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			labels[r.Key] = r.Values[0]
		}
	}
	alloc := nc.Status.Allocatable.DeepCopy()
	if len(alloc) == 0 {
		alloc = nc.Spec.Resources.Requests.DeepCopy()
	}
	return &scheduling.StateNode{
		Name:        nc.Name,
		Labels:      labels,
		Taints:      append([]corev1.Taint(nil), nc.Spec.Taints...),
		Allocatable: alloc,
		InFlight:    true,
		NodePool:    nc.Labels[karpv1.NodePoolLabelKey],
	}
}

// Usage sums the capacity of a NodePool's nodes (and in-flight NodeClaims) and counts them under "nodes".
func Usage(capacities []corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, c := range capacities {
		for n, q := range c {
			s := out[n]
			s.Add(q)
			out[n] = s
		}
	}
	out[scheduling.ResourceNodes] = *resource.NewQuantity(int64(len(capacities)), resource.DecimalSI)
	return out
}

func copyMap(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out[k] = in[k]
	}
	return out
}
