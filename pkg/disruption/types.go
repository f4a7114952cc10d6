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
	// Leaving are the pods of nodes that are being deleted, or that commands in progress drain without
	// replacements: they are about to need room on the other nodes. The decision places them first (on nodes not
	// MarkedForDeletion, as a scheduler would, new capacity aside) and plans around the room they take, so that
	// it does not propose moves into room those pods will fill; the nodes it places them on are not disrupted in
	// the same pass (StayReceiving). Pods that fit nowhere are left out (they will wait as pending pods).
	Leaving []*corev1.Pod
	// Queued are the pods the kube-scheduler has yet to decide about (unbound, not gated, no verdict yet): in a
	// large drift, the evicted pods' successors wait in its queue by the thousand. The decision places them after
	// Leaving, on the nodes other than drifted candidates', and plans around the room they take, without making
	// those nodes receiving; otherwise drift planned deletions into room they were about to take, and the start
	// check refused each one, pass after pass. Pods that fit nowhere are left out.
	Queued []*corev1.Pod
	// Examined is when a previous pass last examined each NodeClaim (Result.Examined of that pass), or nil.
	// Consolidation looks first at the candidates examined longest ago (never examined first), so that
	// candidates a pass could not get to (search timeout, MaxMultiNodeCandidates) go first in the next one.
	Examined map[string]time.Time
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
	// ReservationID is the capacity reservation the node runs in (its karpenter.k8s.aws/capacity-reservation-id
	// label), or empty.
	ReservationID string
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
	// Repair is set when node repair replaces the node (see Repair); nil otherwise.
	Repair *Repair
	// Replacement says a disruption command launched the node (as a replacement); with CreatedAt it tells a
	// fresh replacement, which consolidation undoes only for a saving above a margin (FreshMarginShare).
	Replacement bool
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
	// DecisionTerminateFirst deletes the candidate before any replacement exists (Karpenter v1.15's
	// TerminateFirstDrift and TerminateFirstRepair, when nothing can launch the replacement while the node holds
	// what it needs: the room of its full capacity reservation, or its NodePool's limits): its pods go pending and
	// the provisioner launches for them once the node is gone. Command.TerminateFirstReason says why.
	DecisionTerminateFirst = "terminate-first"
	// DecisionReboot reboots the candidate in place (node repair with the AWS gate RebootForRepair): nothing is
	// launched or deleted, and the pods stay.
	DecisionReboot = "reboot"
)

// Command is one disruption to carry out: taint and drain Candidates after launching Replacements.
type Command struct {
	// Reason is Unhealthy (node repair), Drifted, Empty or Underutilized.
	Reason karpv1.DisruptionReason
	// ConsolidationType is empty, single or multi for consolidation, "" for drift.
	ConsolidationType string
	// Decision is delete (no replacement), replace, terminate-first or reboot.
	Decision string
	// TerminateFirstReason says why a terminate-first command could not launch its replacement first (the
	// terminate_first_reason label of karpenter_voluntary_disruption_terminate_first_decisions_total); empty for
	// the other decisions.
	TerminateFirstReason string
	Candidates           []*Candidate
	// Replacements are the NodeClaims to launch (and wait for) before the candidates are deleted.
	Replacements []*scheduling.NodeClaimPlan
	// Placements are where the simulation put the candidates' pods that do not go to a replacement: on existing
	// nodes or in-flight NodeClaims (Replacements[i].Pods name the others).
	Placements []scheduling.Placement
	// Savings is the hourly price of the candidates less that of the replacements (negative for drift).
	Savings float64
	// Scores are the Balanced scores of the move, one per NodePool of its candidates with consolidationPolicy
	// Balanced (empty otherwise).
	Scores []Score
	// Evictions counts the candidates' pods that would be evicted and rescheduled (the reschedulable ones:
	// DaemonSet, static and terminal pods do not count).
	Evictions int
	// Plan is the id of the whole-cluster plan the command belongs to (WholeClusterPlan.ID), or empty.
	Plan string
}

// Message is a one-line, human-readable summary of the command, for events and logs.
func (c *Command) Message() string {
	names := make([]string, 0, len(c.Candidates))
	for _, cand := range c.Candidates {
		names = append(names, cand.Node)
	}
	msg := describeCommand(c, names)
	if len(c.Candidates) == 1 && c.Candidates[0].Repair != nil && c.Reason == karpv1.DisruptionReasonUnhealthy {
		msg += ": " + c.Candidates[0].Repair.Message
	}
	return msg
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
	// StayNotExamined: the pass ran out of search time or hit a per-pass cap before it got to the node. The node
	// goes first in the next pass (see Snapshot.Examined).
	StayNotExamined StayReason = "NotExamined"
	// StayReceiving: an earlier command of the same pass moves pods onto the node, so the pass does not disrupt it
	// too; the next pass looks at it again.
	StayReceiving StayReason = "ReceivesPods"
	// StayRepairBlocked: node repair would replace the node, but cannot now (its pods fit nowhere, or its drain
	// would have no bound past the pods that block it).
	StayRepairBlocked StayReason = "RepairBlocked"
	// StayScore: the node's NodePool has consolidationPolicy Balanced and the move's savings are not worth its
	// disruption (score below 1/k).
	StayScore StayReason = "ConsolidationScore"
	// StayFreshReplacement: the move would undo replacements launched less than FreshReplacementAge ago for a
	// saving below FreshMarginShare of their price.
	StayFreshReplacement StayReason = "FreshReplacement"
)

// Result is the outcome of one decision pass.
type Result struct {
	// Commands are every disruption the pass decided, in the order they were found (drift, emptiness, multi-node
	// then single-node consolidation). Their candidates are disjoint; each command fits its NodePools' budgets
	// for its reason after the nodes already disrupting (Snapshot.Disrupting) and the earlier commands of the
	// list; and each command's simulation saw the cluster as the earlier commands leave it (their candidates
	// gone, their pods where those commands put them, their replacements in flight and full). They may be
	// started together.
	Commands []*Command
	// Command is Commands[0], or nil when there is none (for callers that carry out one command at a time).
	Command *Command
	// Stays says, for every candidate in no command, why it stays (the first reason found).
	Stays []Stay
	// Examined is, for every current candidate, when a pass last examined it: Snapshot.Examined updated with
	// Snapshot.Now for the candidates this pass reached a verdict on (in a command, or staying for a reason other
	// than the search running out of time, a per-pass cap, a budget or a busy cluster). Feed it back as the next
	// pass's Snapshot.Examined.
	Examined map[string]time.Time
	// SavingsPerHour is the sum of the consolidation commands' savings in $/hour (drift commands do not count).
	SavingsPerHour float64
	// Evictions is the sum of the commands' evictions.
	Evictions int
	// Scored are the Balanced scores the pass computed, approved or rejected, in the order it computed them.
	Scored []Score
	// Eligible counts, per reason, the candidates a method could disrupt before budgets.
	Eligible map[karpv1.DisruptionReason]int
	// Allowed is, per NodePool and reason, how many more nodes budgets allowed to be disrupted at the start of
	// the pass (before its commands).
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
	// WholeClusterMinCandidates is the fewest underutilized candidates the whole-cluster search runs for (0: any
	// number). Below it multi- and single-node consolidation, which are cheap on few nodes and say why each node
	// stays, do the work alone.
	WholeClusterMinCandidates int
	// MaxDriftCommands caps the commands for drifted nodes with pods one pass decides (0: no cap): each costs a
	// simulation, and a pass starts only so many commands (the controller's start window); the drifted nodes left
	// out stay with StayNotExamined until a later pass.
	MaxDriftCommands int
	// PodDeletionCostManagement is Karpenter v1.15's gate: the controller writes controller.kubernetes.io/
	// pod-deletion-cost, so the ranking reads only karpenter.sh/disruption-cost.
	PodDeletionCostManagement bool
	// TerminateFirstRepair is Karpenter v1.15's gate: an unhealthy node whose replacement cannot launch first
	// (its capacity reservation is full, or its NodePool's limits leave no room) is deleted first instead of
	// staying.
	TerminateFirstRepair bool
	// TerminateFirstDrift is Karpenter v1.15's gate: a drifted node in a full capacity reservation, whose pods
	// fit once the node gives back its room in the reservation, is deleted first instead of staying.
	TerminateFirstDrift bool
}
