package scheduling

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// Snapshot is everything a solve looks at. It is read, never modified.
type Snapshot struct {
	// Pods are the pending pods to place.
	Pods []*corev1.Pod
	// Nodes are existing Nodes and in-flight NodeClaims, each with the pods bound or nominated to it.
	Nodes []*StateNode
	// NodePools are the pools new NodeClaims may come from.
	NodePools []*NodePool
	// InstanceTypes are the instance types each NodePool may launch, keyed by NodePool name.
	InstanceTypes map[string][]*cloudprovider.InstanceType
	// DaemonSets add their pod's requests to every new node they would run on.
	DaemonSets []*appsv1.DaemonSet
	// Volume objects the pods refer to.
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*storagev1.StorageClass
	// DefaultSpread are the cluster's default topology spread constraints (SCHEDULER_CONFIG), without selectors.
	// A pending pod without constraints of its own takes them, with its selector from SpreadSelectors; a pod
	// absent from SpreadSelectors (nothing selects it) takes none, as in the kube-scheduler.
	DefaultSpread   []corev1.TopologySpreadConstraint
	SpreadSelectors map[types.NamespacedName]*metav1.LabelSelector
	// DRA, when set, makes pods' resource claims count (see DRA); nil leaves claims out of the solve.
	DRA *DRA
}

// StateNode is an existing Node or an in-flight NodeClaim as the scheduler sees it.
type StateNode struct {
	// Name is the Node name, or the NodeClaim name while in flight.
	Name   string
	Labels map[string]string
	// Taints are the taints pods must tolerate (for in-flight claims: taints without startup taints).
	Taints      []corev1.Taint
	Allocatable corev1.ResourceList
	// Pods are the pods bound (or nominated) to the node; their requests, ports, volumes and labels count. Give a
	// node another list rather than change an element of this one: a Memo knows a node's pods by their list.
	Pods []*corev1.Pod
	// InFlight marks a NodeClaim that has not registered a Node yet.
	InFlight bool
	// NodePool is the owning NodePool, if any.
	NodePool string
	// VolumeLimits caps attachable volumes per CSI driver (from CSINode); absent drivers are unlimited.
	VolumeLimits map[string]int
	// MarkedForDeletion nodes receive no pods.
	MarkedForDeletion bool
}

// NodeSelectorRequirementWithMinValues is a node selector requirement plus the minimum number of distinct values
// a NodeClaim's instance-type options must keep for its key.
type NodeSelectorRequirementWithMinValues struct {
	corev1.NodeSelectorRequirement
	MinValues *int
}

// NodePool is the scheduler's view of a NodePool: only what placement needs, independent of the CRD types.
type NodePool struct {
	Name          string
	Weight        int32
	Requirements  []NodeSelectorRequirementWithMinValues
	Labels        map[string]string
	Taints        []corev1.Taint
	StartupTaints []corev1.Taint
	// Limits caps the total capacity (cpu, memory, nodes, ...) of the pool's nodes; absent names are unlimited.
	Limits corev1.ResourceList
	// Usage is the capacity the pool's existing and in-flight nodes already hold, plus "nodes" (their count).
	Usage corev1.ResourceList
}

// ResourceNodes is the pseudo-resource that limits a NodePool's node count.
const ResourceNodes corev1.ResourceName = "nodes"

// Preference policies.
const (
	PreferencePolicyRespect = "Respect"
	PreferencePolicyIgnore  = "Ignore"
	MinValuesPolicyStrict   = "Strict"
	MinValuesPolicyBest     = "BestEffort"
)

// Lower bounds a solve can report (Options.Bound).
const (
	// BoundPattern is the configuration program's bound (whole pods on each node; see docs/scheduling.md), falling
	// back to the covering bound where it does not apply. The tightest; it takes tenths of a second at thousands of
	// pods on top of the solve.
	BoundPattern = "Pattern"
	// BoundCovering is the covering program's bound alone: fast, and looser by 2-3% on mixed workloads.
	BoundCovering = "Covering"
	// BoundNone computes no bound (LowerBound and Ratio stay 0): what the provisioning controller uses, since only
	// reports need it.
	BoundNone = "None"
)

// Options tune a solve. The zero value means Respect, Strict, 60 options per NodeClaim and the pattern bound.
type Options struct {
	// PreferencePolicy is Respect (preferences are tried, then relaxed one at a time) or Ignore.
	PreferencePolicy string
	// MinValuesPolicy is Strict (a NodeClaim that would break minValues is not planned) or BestEffort.
	MinValuesPolicy string
	// MaxInstanceTypes caps the instance-type options per NodeClaim (cheapest first); default 60.
	MaxInstanceTypes int
	// Bound is the lower bound the plan reports: Pattern (default), Covering or None.
	Bound string
	// Memo, when set, keeps what a series of solves over related snapshots can share (see Memo).
	Memo *Memo
	// LeastAllocated places pods the way the kube-scheduler's default scoring tends to rather than cheaply: the
	// smallest pods first, each on the existing node that keeps the largest share of its cpu and memory free
	// (NodeResourcesFit's LeastAllocated). Only existing nodes take pods; the snapshot's NodePools must be empty.
	// It answers "would the pods still all fit if the kube-scheduler spread the small ones first?".
	LeastAllocated bool
}

// Plan is the result of a solve. Its order is deterministic for a given snapshot.
type Plan struct {
	// Placements put pods on existing nodes or in-flight NodeClaims.
	Placements []Placement
	// NodeClaims are the new nodes to launch.
	NodeClaims []*NodeClaimPlan
	// Unschedulable lists pods that could not be placed, each with a reason.
	Unschedulable []PodError
	// Cost is the hourly price of the new NodeClaims at their cheapest option.
	Cost float64
	// LowerBound is a lower bound on the hourly cost of any plan placing the same pods on new nodes.
	LowerBound float64
	// Ratio is Cost / LowerBound (1 when both are zero; 0 when no bound was asked for).
	Ratio float64
	// Duration is the wall time of the solve, without the bound.
	Duration time.Duration
	// BoundDuration is the wall time of computing the bound.
	BoundDuration time.Duration
}

// Placement binds a pod to an existing node or in-flight NodeClaim.
type Placement struct {
	Pod  types.NamespacedName
	Node string
}

// PodError says why a pod could not be placed.
type PodError struct {
	Pod types.NamespacedName
	// Reason is one short line per NodePool naming the failing constraint (for the pod's FailedScheduling event).
	Reason string
	// Code is a stable category of Reason (for metrics by reason).
	Code ReasonCode
}

// NodeClaimPlan is one node to launch.
type NodeClaimPlan struct {
	// Name is a placeholder unique within the plan ("<nodepool>-<n>"); the controller picks the real name.
	Name     string
	NodePool string
	// Requirements narrow the NodePool's requirements by the pods' needs and include instance-type In options.
	Requirements  []NodeSelectorRequirementWithMinValues
	Labels        map[string]string
	Taints        []corev1.Taint
	StartupTaints []corev1.Taint
	// InstanceTypeOptions are the instance types that fit every pod, cheapest first (at most MaxInstanceTypes,
	// more when minValues needs them).
	InstanceTypeOptions []InstanceTypeOption
	// InstanceType, Zone, CapacityType and Price describe the cheapest option, used for cost and simulation.
	InstanceType string
	Zone         string
	CapacityType string
	Price        float64
	// Pods are the pods planned onto the node.
	Pods []types.NamespacedName
	// Requests are the pods' requests plus DaemonSet overhead on the cheapest option.
	Requests corev1.ResourceList
}

// InstanceTypeOption is one launchable instance type for a NodeClaim and its cheapest compatible offering.
type InstanceTypeOption struct {
	Name         string
	Zone         string
	CapacityType string
	Price        float64
}
