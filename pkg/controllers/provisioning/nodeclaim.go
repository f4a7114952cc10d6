package provisioning

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/nodepool/hash"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
)

// BuildNodeClaim returns the NodeClaim to create for a planned claim: named <nodepool>-<5 random characters>
// by the API server, labelled and owned by its NodePool, with the template's taints, node class, expiry and
// grace period, the plan's requirements and requests, and the NodePool's hash.
func BuildNodeClaim(nn solver.NewNodeClaim) *karpv1.NodeClaim {
	np := nn.NodePool
	t := np.Spec.Template
	labels := map[string]string{}
	for k, v := range t.Labels {
		labels[k] = v
	}
	labels[karpv1.NodePoolLabelKey] = np.Name
	annotations := map[string]string{}
	for k, v := range t.Annotations {
		annotations[k] = v
	}
	h, v := np.Annotations[karpv1.NodePoolHashAnnotationKey], np.Annotations[karpv1.NodePoolHashVersionAnnotationKey]
	if h == "" || v != hash.Version {
		h, v = hash.Compute(np), hash.Version
	}
	annotations[karpv1.NodePoolHashAnnotationKey] = h
	annotations[karpv1.NodePoolHashVersionAnnotationKey] = v
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: np.Name + "-",
			Labels:       labels,
			Annotations:  annotations,
			Finalizers:   []string{karpv1.TerminationFinalizer},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         karpv1.SchemeGroupVersion.String(),
				Kind:               "NodePool",
				Name:               np.Name,
				UID:                np.UID,
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: karpv1.NodeClaimSpec{
			Taints:                 t.Spec.Taints,
			StartupTaints:          t.Spec.StartupTaints,
			Requirements:           nn.Requirements,
			Resources:              karpv1.ResourceRequirements{Requests: nn.Requests},
			NodeClassRef:           t.Spec.NodeClassRef,
			ExpireAfter:            t.Spec.ExpireAfter,
			TerminationGracePeriod: t.Spec.TerminationGracePeriod,
		},
	}
	return nc.DeepCopy()
}
