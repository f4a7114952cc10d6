package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePool describes a group of nodes Dovetail may launch: the template of their NodeClaims, how they may be
// disrupted, and how much capacity they may add up to.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodepools,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.nodes
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.template.spec.nodeClassRef.name",description="Name of the node class the NodePool's nodes use"
// +kubebuilder:printcolumn:name="Nodes",type="string",JSONPath=".status.nodes",description="Number of nodes the NodePool owns"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description="Whether the NodePool can launch nodes"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1,description="Order in which NodePools are tried, highest first"
// +kubebuilder:printcolumn:name="CPU",type="string",JSONPath=".status.resources.cpu",priority=1,description="CPU capacity of the NodePool's nodes"
// +kubebuilder:printcolumn:name="Memory",type="string",JSONPath=".status.resources.memory",priority=1,description="Memory capacity of the NodePool's nodes"
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   NodePoolSpec   `json:"spec"`
	Status NodePoolStatus `json:"status,omitempty"`
}

// NodePoolList is a list of NodePools.
// +kubebuilder:object:root=true
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePool `json:"items"`
}

// NodePoolSpec is the desired state of a NodePool.
// +kubebuilder:validation:XValidation:rule="has(self.replicas) == has(oldSelf.replicas)",message="spec.replicas cannot be added or removed after creation: a NodePool stays static (replicas set) or dynamic (replicas unset)"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.limits) || size(self.limits) == 0 || (size(self.limits) == 1 && 'nodes' in self.limits)",message="spec.limits: a static NodePool (spec.replicas set) supports only limits.nodes"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.weight)",message="spec.weight cannot be set on a static NodePool (spec.replicas set)"
type NodePoolSpec struct {
	// Template describes the NodeClaims the NodePool creates.
	// +required
	Template NodeClaimTemplate `json:"template"`
	// Disruption controls how the NodePool's nodes may be consolidated and how many may be disrupted at once.
	// +kubebuilder:default:={consolidateAfter: "0s"}
	// +optional
	Disruption Disruption `json:"disruption"`
	// Limits caps the total resources (cpu, memory, nodes, extended resources) of the NodePool's nodes.
	// +optional
	Limits Limits `json:"limits,omitempty"`
	// Weight orders NodePools: those with a higher weight are tried first.
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
	// Replicas makes the NodePool static: it keeps exactly this many nodes regardless of pending pods.
	// +kubebuilder:validation:Minimum:=0
	// +optional
	Replicas *int64 `json:"replicas,omitempty"`
}

// Limits are resource ceilings for the sum of a NodePool's node capacities.
type Limits corev1.ResourceList

// NodeClaimTemplate is the template of the NodeClaims of a NodePool.
type NodeClaimTemplate struct {
	// +optional
	ObjectMeta `json:"metadata,omitempty"`
	// +required
	Spec NodeClaimTemplateSpec `json:"spec"`
}

// ObjectMeta is the subset of metadata a NodeClaim template may set on its nodes.
type ObjectMeta struct {
	// Labels are added to every NodeClaim and Node created from the template.
	// +kubebuilder:validation:MaxProperties:=100
	// +kubebuilder:validation:XValidation:rule="self.all(x, x != \"karpenter.sh/nodepool\")",message="template label \"karpenter.sh/nodepool\" is set by Dovetail and may not be set in spec.template.metadata.labels"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x != \"kubernetes.io/hostname\")",message="template label \"kubernetes.io/hostname\" is set by the kubelet and may not be set in spec.template.metadata.labels"
	// +mapType=atomic
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are added to every NodeClaim and Node created from the template.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NodeClaimTemplateSpec is the spec of the NodeClaims a NodePool creates. Unlike NodeClaimSpec it has no
// resource requests: those are computed from the pods being scheduled.
type NodeClaimTemplateSpec struct {
	// Taints are applied to every node and must be tolerated by the pods scheduled on it.
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are applied at launch and expected to be removed by a daemon once the node is ready.
	// They are not considered when scheduling.
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements narrow the instance types, zones, capacity types and other well-known labels of the nodes.
	// The key, operator and values of each requirement are checked by rules hack/crdpatch adds.
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator != 'In' || (has(x.values) && size(x.values) > 0))",message="requirements: operator In needs at least one value"
	// +kubebuilder:validation:XValidation:rule="self.all(x, !(x.operator in ['Gt', 'Lt', 'Gte', 'Lte']) || (has(x.values) && size(x.values) == 1))",message="requirements: operators Gt, Lt, Gte and Lte need exactly one value, a non-negative integer"
	// +kubebuilder:validation:XValidation:rule="self.all(x, !(x.operator in ['Gt', 'Lt', 'Gte', 'Lte']) || !has(x.values) || size(x.values) != 1 || int(x.values[0]) >= 0)",message="requirements: operators Gt, Lt, Gte and Lte need a non-negative integer value"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.operator != 'In' || !has(x.minValues) || (has(x.values) && size(x.values) >= x.minValues))",message="requirements: minValues must not exceed the number of values of an In requirement"
	// +kubebuilder:validation:MaxItems:=100
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// NodeClassRef names the cloud-specific node class (an EC2NodeClass) the nodes are launched with.
	// +kubebuilder:validation:XValidation:rule="self.group == oldSelf.group",message="spec.template.spec.nodeClassRef.group is immutable; create a new NodePool to change it"
	// +kubebuilder:validation:XValidation:rule="self.kind == oldSelf.kind",message="spec.template.spec.nodeClassRef.kind is immutable; create a new NodePool to change it"
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod is how long a draining node may wait for its pods before they are deleted
	// regardless of PodDisruptionBudgets and do-not-disrupt annotations. Unset means no limit.
	// +kubebuilder:validation:Type:="string"
	// +kubebuilder:validation:Pattern:=`^([0-9]+(s|m|h))+$`
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long a node may live before it is replaced, or "Never".
	// +kubebuilder:validation:Pattern:=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type:="string"
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:default:="720h"
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitzero"`
}

// Disruption controls voluntary disruption of a NodePool's nodes.
type Disruption struct {
	// ConsolidateAfter is how long a node must have seen no pod scheduled or removed before it may be
	// consolidated, or "Never" to disable consolidation.
	// +kubebuilder:validation:Pattern:=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type:="string"
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:default:="0s"
	// +optional
	ConsolidateAfter NillableDuration `json:"consolidateAfter,omitzero"`
	// ConsolidationPolicy says which nodes may be consolidated: only empty ones (WhenEmpty), also underutilized
	// ones (WhenEmptyOrUnderutilized), or underutilized ones when the move's savings outweigh its disruption
	// (Balanced).
	// +kubebuilder:default:="WhenEmptyOrUnderutilized"
	// +optional
	ConsolidationPolicy ConsolidationPolicy `json:"consolidationPolicy,omitempty"`
	// Budgets cap how many nodes may be disrupted at the same time, optionally per reason and time window.
	// +kubebuilder:validation:MaxItems:=50
	// +kubebuilder:validation:XValidation:rule="self.all(x, has(x.schedule) == has(x.duration))",message="spec.disruption.budgets: schedule and duration must be set together"
	// +kubebuilder:default:={{nodes: "10%"}}
	// +optional
	Budgets []Budget `json:"budgets,omitempty"`
}

// Budget limits the number of nodes of a NodePool that may be disrupted at once.
type Budget struct {
	// Reasons limits the budget to these disruption reasons; empty means all reasons. Each reason at most once.
	// +listType=set
	// +kubebuilder:validation:MaxItems:=50
	// +optional
	Reasons []DisruptionReason `json:"reasons,omitempty"`
	// Nodes is the number ("5") or percentage ("10%") of the NodePool's nodes that may be disrupted at once.
	// +kubebuilder:validation:Pattern:=`^((100|[0-9]{1,2})%|[0-9]+)$`
	// +kubebuilder:default:="10%"
	Nodes string `json:"nodes"`
	// Schedule is a cron expression (UTC), or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight,
	// @hourly, at which the budget becomes active. Requires Duration.
	// +kubebuilder:validation:Pattern:=`^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$`
	// +optional
	Schedule *string `json:"schedule,omitempty"`
	// Duration is how long the budget stays active after each Schedule time, in hours and minutes (e.g. 8h,
	// 30m, 1h30m). Requires Schedule.
	// +kubebuilder:validation:Pattern:=`^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$`
	// +kubebuilder:validation:Type:="string"
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
}

// ConsolidationPolicy says which nodes consolidation may remove or replace.
// +kubebuilder:validation:Enum:={WhenEmpty,WhenEmptyOrUnderutilized,Balanced}
type ConsolidationPolicy string

// Consolidation policies.
const (
	// ConsolidationPolicyWhenEmpty consolidates only nodes without reschedulable pods.
	ConsolidationPolicyWhenEmpty ConsolidationPolicy = "WhenEmpty"
	// ConsolidationPolicyWhenEmptyOrUnderutilized also replaces or removes underutilized nodes.
	ConsolidationPolicyWhenEmptyOrUnderutilized ConsolidationPolicy = "WhenEmptyOrUnderutilized"
	// ConsolidationPolicyBalanced consolidates like WhenEmptyOrUnderutilized but approves a move only when its
	// savings are worth its disruption (Karpenter v1.14's score-based policy).
	ConsolidationPolicyBalanced ConsolidationPolicy = "Balanced"
)

// DisruptionReason is a reason a budget can be limited to.
// +kubebuilder:validation:Enum:={Underutilized,Empty,Drifted,Unhealthy}
type DisruptionReason string

// Disruption reasons budgets can select.
const (
	DisruptionReasonUnderutilized DisruptionReason = "Underutilized"
	DisruptionReasonEmpty         DisruptionReason = "Empty"
	DisruptionReasonDrifted       DisruptionReason = "Drifted"
	// DisruptionReasonUnhealthy (Karpenter v1.15) limits node repair: the replacement of unhealthy nodes.
	DisruptionReasonUnhealthy DisruptionReason = "Unhealthy"
)

// NodePoolStatus is the observed state of a NodePool.
type NodePoolStatus struct {
	// Resources is the sum of the capacities of the NodePool's nodes, plus a "nodes" count.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Nodes is the number of nodes the NodePool owns.
	// +optional
	Nodes *int64 `json:"nodes,omitempty"`
	// NodeClassObservedGeneration is the generation of the node class last seen by the NodePool controller.
	// +optional
	NodeClassObservedGeneration int64 `json:"nodeClassObservedGeneration,omitempty"`
	// Conditions are the NodePool's status conditions; Ready is the root condition.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
