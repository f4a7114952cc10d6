package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeOverlay changes what Dovetail assumes about the instance types its requirements select: their price (to
// account for discounts, licences or penalties the cloud's price list does not show) and extended resources their
// nodes will have (e.g. a device plugin's resource, hugepages). Provisioning, consolidation, simulate and explain
// all see the overlaid instance types. It takes effect only with FEATURE_GATES NodeOverlay=true.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodeoverlays,scope=Cluster,categories=karpenter,shortName=overlays
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description="Whether the overlay is applied"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1,description="Precedence among overlays, highest first"
type NodeOverlay struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   NodeOverlaySpec   `json:"spec"`
	Status NodeOverlayStatus `json:"status,omitempty"`
}

// NodeOverlayList is a list of NodeOverlays.
// +kubebuilder:object:root=true
type NodeOverlayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeOverlay `json:"items"`
}

// NodeOverlaySpec selects instance types and says what to change about them.
// +kubebuilder:validation:XValidation:rule="!has(self.price) || !has(self.priceAdjustment)",message="cannot set both 'price' and 'priceAdjustment': price replaces the price, priceAdjustment changes it"
type NodeOverlaySpec struct {
	// Requirements select the instance types (and, for prices, the offerings) the overlay changes, with the
	// semantics of NodePool requirements. Besides the instance types' well-known labels they may name
	// karpenter.sh/nodepool, karpenter.sh/capacity-type, topology.kubernetes.io/zone and the labels of a
	// NodePool's template. An empty list selects every instance type.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator != 'In' || (has(x.values) && size(x.values) > 0))",message="requirements with operator 'In' must have a value defined"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator != 'NotIn' || (has(x.values) && size(x.values) > 0))",message="requirements with operator 'NotIn' must have a value defined"
	// +kubebuilder:validation:XValidation:rule="self.all(x, !(x.operator in ['Gt', 'Lt', 'Gte', 'Lte']) || (has(x.values) && size(x.values) == 1 && int(x.values[0]) >= 0))",message="requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer value"
	// +required
	Requirements []NodeSelectorRequirement `json:"requirements"`
	// PriceAdjustment changes the price of the selected offerings: a signed amount ("+0.1", "-0.25") or a signed
	// percentage ("+10%", "-15%", at most -100%). The result is never below zero.
	// +kubebuilder:validation:Pattern=`^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$`
	// +optional
	PriceAdjustment *string `json:"priceAdjustment,omitempty"`
	// Price replaces the price of the selected offerings (an unsigned decimal, e.g. "0.05").
	// +kubebuilder:validation:Pattern=`^\d+(\.\d+)?$`
	// +optional
	Price *string `json:"price,omitempty"`
	// Capacity adds extended resources to the selected instance types (their nodes' capacity and allocatable).
	// It cannot change cpu, memory, ephemeral-storage or pods. A hugepages-* resource is taken out of the
	// memory pods may use, as the kubelet does.
	// +kubebuilder:validation:XValidation:rule="self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))",message="invalid resource restricted: capacity cannot change cpu, memory, ephemeral-storage or pods"
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Weight orders overlays: where several select the same offering (price) or resource (capacity), the highest
	// weight wins; unset counts as 0. Two overlays of the same weight that both set the price of an offering, or
	// the same resource of an instance type, conflict: the one applied second is not applied.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// NodeSelectorRequirement is a label key, an operator and values, as in NodePool requirements (without
// minValues).
type NodeSelectorRequirement struct {
	// Key is the label key the requirement applies to.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	// +required
	Key string `json:"key"`
	// Operator relates the key to the values: In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt;Gte;Lte
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values are the values the operator compares with: at least one for In and NotIn, exactly one non-negative
	// integer for Gt, Lt, Gte and Lte, none for Exists and DoesNotExist.
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// AsNodeSelectorRequirement returns the requirement as a Kubernetes node selector requirement.
func (r NodeSelectorRequirement) AsNodeSelectorRequirement() corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values}
}

// NodeSelectorRequirements returns the overlay's requirements as Kubernetes node selector requirements.
func (in *NodeOverlay) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	out := make([]corev1.NodeSelectorRequirement, 0, len(in.Spec.Requirements))
	for _, r := range in.Spec.Requirements {
		out = append(out, r.AsNodeSelectorRequirement())
	}
	return out
}

// WeightOrZero returns the overlay's weight, 0 when unset.
func (in *NodeOverlay) WeightOrZero() int32 {
	if in.Spec.Weight == nil {
		return 0
	}
	return *in.Spec.Weight
}

// NodeOverlayStatus is the observed state of a NodeOverlay.
type NodeOverlayStatus struct {
	// Conditions are the overlay's status conditions: ValidationSucceeded (false with reason Conflict or
	// RuntimeValidation when the overlay is not applied) and the root Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
