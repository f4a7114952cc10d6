package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaim is a request for one node: Dovetail launches an instance matching its spec, waits for the node to
// register and initialize, and tears it down when the NodeClaim is deleted.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodeclaims,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".metadata.labels.node\\.kubernetes\\.io/instance-type",description="Instance type"
// +kubebuilder:printcolumn:name="Capacity",type="string",JSONPath=".metadata.labels.karpenter\\.sh/capacity-type",description="Capacity type (spot, on-demand, reserved)"
// +kubebuilder:printcolumn:name="Zone",type="string",JSONPath=".metadata.labels.topology\\.kubernetes\\.io/zone",description="Zone"
// +kubebuilder:printcolumn:name="Node",type="string",JSONPath=".status.nodeName",description="Name of the registered node"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description="Whether the node is launched, registered and initialized"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="ImageID",type="string",JSONPath=".status.imageID",priority=1,description="Image the instance was launched from"
// +kubebuilder:printcolumn:name="ID",type="string",JSONPath=".status.providerID",priority=1,description="Provider ID of the instance"
// +kubebuilder:printcolumn:name="NodePool",type="string",JSONPath=".metadata.labels.karpenter\\.sh/nodepool",priority=1,description="Owning NodePool"
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.nodeClassRef.name",priority=1,description="Node class the instance was launched with"
// +kubebuilder:printcolumn:name="Drifted",type="string",JSONPath=".status.conditions[?(@.type==\"Drifted\")].status",priority=1,description="Whether the NodeClaim has drifted from its NodePool or node class"
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: NodeClaim spec cannot be changed after creation"
	// +required
	Spec   NodeClaimSpec   `json:"spec"`
	Status NodeClaimStatus `json:"status,omitempty"`
}

// NodeClaimList is a list of NodeClaims.
// +kubebuilder:object:root=true
type NodeClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeClaim `json:"items"`
}

// NodeClaimSpec is the desired node. It is immutable once created.
type NodeClaimSpec struct {
	// Taints are applied to the node and must be tolerated by its pods.
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are applied at launch and expected to be removed by a daemon once the node is ready.
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the instance types, zones, capacity types and other labels of the node.
	// The key, operator and values of each requirement are checked by rules hack/crdpatch adds.
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator != 'In' || (has(x.values) && size(x.values) > 0))",message="requirements: operator In needs at least one value"
	// +kubebuilder:validation:XValidation:rule="self.all(x, !(x.operator in ['Gt', 'Lt', 'Gte', 'Lte']) || (has(x.values) && size(x.values) == 1))",message="requirements: operators Gt, Lt, Gte and Lte need exactly one value, a non-negative integer"
	// +kubebuilder:validation:XValidation:rule="self.all(x, !(x.operator in ['Gt', 'Lt', 'Gte', 'Lte']) || !has(x.values) || size(x.values) != 1 || int(x.values[0]) >= 0)",message="requirements: operators Gt, Lt, Gte and Lte need a non-negative integer value"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator != 'In' || !has(x.minValues) || (has(x.values) && size(x.values) >= x.minValues))",message="requirements: minValues must not exceed the number of values of an In requirement"
	// +kubebuilder:validation:MaxItems:=100
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// Resources are the minimum resources the node must offer to its pods.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`
	// NodeClassRef names the cloud-specific node class (an EC2NodeClass) the node is launched with.
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod is how long a draining node may wait for its pods before they are deleted
	// regardless of PodDisruptionBudgets and do-not-disrupt annotations. Unset means no limit.
	// +kubebuilder:validation:Type:="string"
	// +kubebuilder:validation:Pattern:=`^([0-9]+(s|m|h))+$`
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long the node may live before it is replaced, or "Never".
	// +kubebuilder:validation:Pattern:=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type:="string"
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:default:="720h"
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitzero"`
}

// ResourceRequirements are the resources a NodeClaim asks for.
type ResourceRequirements struct {
	// Requests are the minimum resources the node must offer.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// NodeClassReference points at a cloud-specific node class object.
type NodeClassReference struct {
	// Kind of the node class, e.g. EC2NodeClass.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="nodeClassRef.kind may not be empty"
	// +required
	Kind string `json:"kind"`
	// Name of the node class.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="nodeClassRef.name may not be empty"
	// +required
	Name string `json:"name"`
	// Group of the node class, e.g. karpenter.k8s.aws.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="nodeClassRef.group may not be empty"
	// +kubebuilder:validation:Pattern:=`^[^/]*$`
	// +required
	Group string `json:"group"`
}

// NodeSelectorRequirementWithMinValues is a node selector requirement with an optional minimum number of
// distinct values (e.g. instance types) that must remain possible when scheduling.
// Schema rules for the embedded key, operator and values are added by hack/crdpatch.
type NodeSelectorRequirementWithMinValues struct {
	corev1.NodeSelectorRequirement `json:",inline"`
	// MinValues is the minimum number of distinct values of Key the scheduler must keep possible.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=50
	// +optional
	MinValues *int `json:"minValues,omitempty"`
}

// NodeClaimStatus is the observed state of a NodeClaim.
type NodeClaimStatus struct {
	// NodeName is the name of the Node that registered for this NodeClaim.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ProviderID is the cloud provider's ID of the instance, e.g. aws:///us-west-2a/i-0123456789abcdef0.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// ImageID is the image the instance was launched from.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// Capacity is the node's total resources as launched.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable is the node's resources available to pods.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// LastPodEventTime is when a pod was last scheduled to or removed from the node.
	// +optional
	LastPodEventTime metav1.Time `json:"lastPodEventTime,omitzero"`
	// Conditions are the NodeClaim's status conditions; Ready is the root condition.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
