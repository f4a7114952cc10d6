package disruption

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// Snapshot is everything a disruption decision looks at. It is read, never modified.
type Snapshot struct {
	// Now is the time budgets and schedules are evaluated at.
	Now time.Time
	// Cluster is the cluster as the scheduler sees it: every Node and in-flight NodeClaim with its pods, the
	// NodePools and instance types replacements may use, DaemonSets and volumes. Its Pods are ignored: each
	// simulation sets the pods it moves.
	Cluster *scheduling.Snapshot
	// Candidates are Dovetail's nodes that a method could disrupt: one per NodeClaim with a registered Node.
	Candidates []*Candidate
	// NodePools are the NodePools of the candidates, by name.
	NodePools map[string]*karpv1.NodePool
	// PodDisruptionBudgets are every PDB in the cluster (their status says how many disruptions they allow).
	PodDisruptionBudgets []*policyv1.PodDisruptionBudget
	// Disrupting counts, per NodePool, the nodes already being disrupted or deleted.
	Disrupting map[string]int
	// NodeCounts counts, per NodePool, its nodes (for percentage budgets).
	NodeCounts map[string]int
	// Busy says why no new consolidation may start now (nodes still launching, a command in progress), or is
	// empty. Drift still runs when the cluster is busy.
	Busy string
	// Pending are the pods waiting for a node (marked unschedulable by the kube-scheduler). Consolidation waits
	// while any of them could be placed, on a node or on new capacity the provisioner is about to launch; pods
	// that fit nowhere (no NodePool can take them) do not hold it up, or one such pod would stop consolidation in
	// the whole cluster for as long as it exists.
	Pending []*corev1.Pod
}

// Candidate is one of Dovetail's nodes with what the decision needs to know about it.
type Candidate struct {
	// NodeClaim and Node name the node; Node is the name of its StateNode in Snapshot.Cluster.
	NodeClaim string
	Node      string
	NodePool  string
	// InstanceType, Zone, CapacityType and Price describe what it runs as (Price in $/hour).
	InstanceType string
	Zone         string
	CapacityType string
	Price        float64
	// Pods are every pod bound to the node that is not terminal.
	Pods []*corev1.Pod
	// NodeAnnotations are the Node's annotations (do-not-disrupt).
	NodeAnnotations map[string]string
	// Initialized says the NodeClaim is Initialized; Deleting that it (or its Node) is being deleted.
	Initialized bool
	Deleting    bool
	// Consolidatable mirrors the NodeClaim's Consolidatable condition (consolidateAfter has passed).
	Consolidatable bool
	// Drifted is the reason of a true Drifted condition, or empty.
	Drifted string
	// CreatedAt orders candidates of equal disruption cost (older first).
	CreatedAt time.Time
}

// Method names, as in the metrics' consolidation_type label and in events.
const (
	ConsolidationEmpty  = "empty"
	ConsolidationSingle = "single"
	ConsolidationMulti  = "multi"
)

// Decisions.
const (
	DecisionDelete  = "delete"
	DecisionReplace = "replace"
)

// Command is one disruption to carry out: taint and drain Candidates after launching Replacements.
type Command struct {
	// Reason is Drifted, Empty or Underutilized.
	Reason karpv1.DisruptionReason
	// ConsolidationType is empty, single or multi for consolidation, "" for drift.
	ConsolidationType string
	// Decision is delete (no replacement) or replace.
	Decision   string
	Candidates []*Candidate
	// Replacements are the NodeClaims to launch (and wait for) before the candidates are deleted.
	Replacements []*scheduling.NodeClaimPlan
	// Savings is the hourly price of the candidates less that of the replacements (negative for drift).
	Savings float64
	// Plan is the id of the whole-cluster plan the command belongs to (WholeClusterPlan.ID), or empty.
	Plan string
}

// Message is a one-line, human-readable summary of the command, for events and logs.
func (c *Command) Message() string {
	names := make([]string, 0, len(c.Candidates))
	for _, cand := range c.Candidates {
		names = append(names, cand.Node)
	}
	return describeCommand(c, names)
}

// Stay says why one candidate was left alone by a pass.
type Stay struct {
	NodeClaim string
	Node      string
	// Reason is a short, stable category (DoNotDisrupt, PodDisruptionBudget, NotConsolidatable, Budget, ...).
	Reason StayReason
	// Message is a sentence a user can act on.
	Message string
}

// StayReason categorises why a node stays.
type StayReason string

// Why a node stays.
const (
	StayNotInitialized    StayReason = "NotInitialized"
	StayDeleting          StayReason = "Deleting"
	StayDoNotDisrupt      StayReason = "DoNotDisrupt"
	StayPDB               StayReason = "PodDisruptionBudget"
	StayUnmovablePod      StayReason = "UnmovablePod"
	StayNoNodePool        StayReason = "NoNodePool"
	StayNotConsolidatable StayReason = "NotConsolidatable"
	StayPolicy            StayReason = "ConsolidationPolicy"
	StayBudget            StayReason = "Budget"
	StayNoCheaper         StayReason = "NoCheaperReplacement"
	StayPodsDoNotFit      StayReason = "PodsDoNotFit"
	StaySpotToSpot        StayReason = "SpotToSpot"
	StayBusy              StayReason = "ClusterBusy"
)

// Result is the outcome of one decision pass.
type Result struct {
	// Command is the disruption to carry out, or nil.
	Command *Command
	// Stays says, for every candidate not in Command, why it stays (the first reason found).
	Stays []Stay
	// Eligible counts, per reason, the candidates a method could disrupt before budgets.
	Eligible map[karpv1.DisruptionReason]int
	// Allowed is, per NodePool and reason, how many more nodes budgets allow to be disrupted now.
	Allowed map[string]map[karpv1.DisruptionReason]int
	// TimedOut names consolidation types whose search ran out of time.
	TimedOut []string
	// Waiting says why consolidation waits this pass (Snapshot.Busy, or pending pods the provisioner can place),
	// or is empty.
	Waiting string
	// WholeCluster is the whole-cluster method's plan of the pass, when it ran.
	WholeCluster *WholeClusterPlan
}

// Options tune a decision pass.
type Options struct {
	// SpotToSpotConsolidation lets consolidation replace spot nodes with cheaper spot nodes.
	SpotToSpotConsolidation bool
	// MultiNodeTimeout and SingleNodeTimeout bound the consolidation searches (default 1 min and 3 min).
	MultiNodeTimeout  time.Duration
	SingleNodeTimeout time.Duration
	// MaxMultiNodeCandidates caps the candidates multi-node consolidation looks at (default 100).
	MaxMultiNodeCandidates int
	// Scheduling are the options of the simulations.
	Scheduling scheduling.Options
	// WholeCluster runs the whole-cluster search (wholecluster.go) between emptiness and multi-node consolidation.
	WholeCluster bool
}
