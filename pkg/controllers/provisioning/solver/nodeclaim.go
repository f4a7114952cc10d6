package solver

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/hashversion"
)

// BuildNodeClaim returns the NodeClaim to create for a planned claim: named <nodepool>-<5 random characters>
// by the API server, labelled and owned by its NodePool, with the template's taints, node class, expiry and
// grace period, the plan's requirements and requests, and the NodePool's hash.
func BuildNodeClaim(nn NewNodeClaim) *karpv1.NodeClaim {
	np := nn.NodePool
	t := np.Spec.Template
	labels := map[string]string{}
	for k, v := range t.Labels {
		labels[k] = v
	}
	labels[karpv1.NodePoolLabelKey] = np.Name
	if ref := t.Spec.NodeClassRef; ref != nil && ref.Group != "" && ref.Kind != "" {
		labels[karpv1.NodeClassLabelKey(ref)] = ref.Name
	}
	annotations := map[string]string{}
	for k, v := range t.Annotations {
		annotations[k] = v
	}
	h, v := np.Annotations[karpv1.NodePoolHashAnnotationKey], np.Annotations[karpv1.NodePoolHashVersionAnnotationKey]
	if h == "" || v != hashversion.NodePoolVersion {
		h, v = hashversion.NodePool(np), hashversion.NodePoolVersion
	}
	annotations[karpv1.NodePoolHashAnnotationKey] = h
	annotations[karpv1.NodePoolHashVersionAnnotationKey] = v
	if len(nn.InstanceTypes) > 0 {
		// Planned by the scheduler (a static NodePool's NodeClaims leave the choice to the cloud provider).
		annotations[karpv1.NodeClaimMinValuesRelaxedAnnotationKey] = strconv.FormatBool(minValuesRelaxed(nn))
		price, capacity := overlaysApplied(nn.InstanceTypes)
		if price {
			annotations[karpv1.PriceOverlayAppliedAnnotationKey] = "true"
		}
		if capacity {
			annotations[karpv1.CapacityOverlayAppliedAnnotationKey] = "true"
		}
	}
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

// minValuesRelaxed reports whether the instance types the NodeClaim may launch as offer fewer distinct values of
// a requirement's key than its minValues: the scheduler let that through under MIN_VALUES_POLICY=BestEffort.
func minValuesRelaxed(nn NewNodeClaim) bool {
	for _, r := range nn.Requirements {
		if r.MinValues == nil {
			continue
		}
		values := map[string]bool{}
		for _, it := range nn.InstanceTypes {
			switch r.Key {
			case corev1.LabelInstanceTypeStable:
				values[it.Name] = true
			case corev1.LabelTopologyZone, karpv1.CapacityTypeLabelKey:
				for _, o := range it.Offerings {
					v := o.Zone
					if r.Key == karpv1.CapacityTypeLabelKey {
						v = o.CapacityType
					}
					values[v] = true
				}
			default:
				if v, ok := it.Labels[r.Key]; ok {
					values[v] = true
				}
			}
		}
		if len(values) < *r.MinValues {
			return true
		}
	}
	return false
}

// overlaysApplied reports whether a NodeOverlay set the price of an offering of one of the instance types, and
// whether one extended the capacity of one of them.
func overlaysApplied(its []*cloudprovider.InstanceType) (price, capacity bool) {
	for _, it := range its {
		if len(it.CapacityOverlays) > 0 {
			capacity = true
		}
		for _, o := range it.Offerings {
			if o.PriceOverlay != "" {
				price = true
			}
		}
	}
	return price, capacity
}
