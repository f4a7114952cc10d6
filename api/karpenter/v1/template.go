package v1

import (
	"fmt"
	"maps"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ToNodeClaim returns a NodeClaim built from the template: labels, annotations and spec are deep copies,
// resource requests are empty. Callers add the name, the karpenter.sh/nodepool label, the owner reference
// and the requirements and requests of the pods being scheduled.
func (in *NodeClaimTemplate) ToNodeClaim() *NodeClaim {
	t := in.DeepCopy()
	return &NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      maps.Clone(t.Labels),
			Annotations: maps.Clone(t.Annotations),
		},
		Spec: NodeClaimSpec{
			Taints:                 t.Spec.Taints,
			StartupTaints:          t.Spec.StartupTaints,
			Requirements:           t.Spec.Requirements,
			NodeClassRef:           t.Spec.NodeClassRef,
			TerminationGracePeriod: t.Spec.TerminationGracePeriod,
			ExpireAfter:            t.Spec.ExpireAfter,
		},
	}
}

// ExceededBy returns an error naming the first resource (in name order) whose usage is above its limit, or
// nil. Resources without a limit are unbounded.
func (l Limits) ExceededBy(usage corev1.ResourceList) error {
	names := make([]string, 0, len(usage))
	for name := range usage {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, n := range names {
		name := corev1.ResourceName(n)
		limit, ok := l[name]
		if !ok {
			continue
		}
		if used := usage[name]; used.Cmp(limit) > 0 {
			return fmt.Errorf("%s usage %s exceeds the NodePool limit %s", name, used.String(), limit.String())
		}
	}
	return nil
}
