package solver

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// Solver turns a snapshot of pending pods and capacity into a plan.
type Solver interface {
	Solve(ctx context.Context, in Input) Plan
}

// Input is everything a Solver may look at. Slices are in a deterministic order.
type Input struct {
	// Pods are the pending pods to place.
	Pods []*corev1.Pod
	// NodePools are the NodePools that may launch capacity, with what they can launch.
	NodePools []NodePoolOption
	// InFlight are the NodeClaims (launching, registering or running) that can still take pods.
	InFlight []InFlightClaim
	// Nodes are the cluster's Nodes, each with the pods bound to it. The scheduler counts them for topology
	// spread, pod affinity, host ports and volumes.
	Nodes []ExistingNode
	// DaemonSets run a pod on every new node they tolerate; their requests are overhead on new nodes.
	DaemonSets []*appsv1.DaemonSet
	// Pinned maps pending pods (namespace/name) to the in-flight NodeClaim, or the Node of one that registered,
	// that they stay on (by the name Plan.Existing uses): an earlier pass planned them there and nothing since
	// contradicts it. A solver counts them there, as if bound, and plans the other pods around them; a pin whose
	// pod is not in Pods or whose NodeClaim or Node is not in the input is ignored.
	Pinned map[string]string
	// Volume objects pending pods refer to (zonal volumes pin pods to zones).
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*storagev1.StorageClass
	// DRA is what pods' resource claims are planned against; nil when IGNORE_DRA_REQUESTS=true.
	DRA *scheduling.DRA
	// DRAProblem, when set, says why resource claims cannot be planned this pass (device model overrides that do
	// not validate): pods with claims are unschedulable with it.
	DRAProblem string
}

// NodePoolOption is a NodePool with its instance types and its current usage.
type NodePoolOption struct {
	NodePool      *karpv1.NodePool
	InstanceTypes []*cloudprovider.InstanceType
	// Usage is the sum of the capacity of the NodePool's NodeClaims plus a "nodes" count, compared with
	// Spec.Limits.
	Usage corev1.ResourceList
}

// InFlightClaim is a NodeClaim, launching or running, with the room it has left for pods.
type InFlightClaim struct {
	NodeClaim *karpv1.NodeClaim
	// Labels are the labels its node will have (known after launch, otherwise from single-valued requirements).
	Labels map[string]string
	// Taints are the NodeClaim's taints (startup taints excluded).
	Taints []corev1.Taint
	// Available is the allocatable capacity minus requests of pods already bound to its node.
	Available corev1.ResourceList
}

// ExistingNode is a Node with the pods bound to it and, for nodes Dovetail launched, its NodeClaim.
type ExistingNode struct {
	Node *corev1.Node
	Pods []*corev1.Pod
	// NodeClaim is nil for nodes Dovetail did not launch.
	NodeClaim *karpv1.NodeClaim
}

// Plan is a Solver's decision.
type Plan struct {
	// Existing maps a pod (namespace/name) to the existing NodeClaim or Node it is expected to land on (by name).
	Existing map[string]string
	// NewNodeClaims are NodeClaims to create.
	NewNodeClaims []NewNodeClaim
	// Unschedulable maps a pod (namespace/name) to why no capacity could be found for it.
	Unschedulable map[string]string
	// UnschedulableCodes maps the same pods to a stable category of the reason (scheduling.ReasonCode values:
	// Resources, Taints, Requirements, Limits, ...), for metrics; a solver may leave it empty.
	UnschedulableCodes map[string]string
}

// NewNodeClaim is a NodeClaim to create for some pods.
type NewNodeClaim struct {
	NodePool *karpv1.NodePool
	// InstanceTypes are the allowed types, cheapest first, each with the offerings still allowed.
	InstanceTypes []*cloudprovider.InstanceType
	// Requirements are the NodePool's requirements narrowed by the pods and the chosen instance types.
	Requirements []karpv1.NodeSelectorRequirementWithMinValues
	// Requests is the sum of the pods' requests plus a pods count.
	Requests corev1.ResourceList
	Pods     []*corev1.Pod
}

// PodKey returns namespace/name.
func PodKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
