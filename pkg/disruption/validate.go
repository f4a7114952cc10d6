package disruption

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail/dovetail/pkg/scheduling"
)

// DrainCheck is the question asked just before a command's candidates drain: do the pods that must move fit on
// the nodes that exist now, where the kube-scheduler actually put every other pod?
type DrainCheck struct {
	// Cluster is the cluster as it is now. Only registered nodes that are not MarkedForDeletion and not in Drain
	// can take pods: in-flight NodeClaims (not registered yet) and new capacity are left out, since the pods of a
	// draining node are rescheduled at once.
	Cluster *scheduling.Snapshot
	// Drain names the nodes (Cluster's node names) about to lose their pods: the command's candidates, plus the
	// nodes other commands are draining or were cleared to drain in the same pass.
	Drain map[string]bool
	// Moving are the pods bound to the Drain nodes; those that are not Reschedulable are ignored.
	Moving []*corev1.Pod
	// Pending are pods waiting for a node now. They compete for the same room, so the check fails when moving
	// the pods would leave more of them unplaced than are unplaced today.
	Pending []*corev1.Pod
	// Coming are nodes on their way that no drain may count on yet but that new capacity need not duplicate: the
	// extra capacity other commands of the same pass planned, with the pods it was planned for. Only
	// ExtraCapacity looks at them.
	Coming []*scheduling.StateNode
}

// ValidateDrain answers a DrainCheck: "" when every reschedulable pod of the drained nodes fits on the remaining
// nodes without leaving a pending pod that fits today unplaced, otherwise a sentence saying which pod would wait.
// It is deterministic for a given check.
func ValidateDrain(ctx context.Context, chk DrainCheck, opts scheduling.Options) (string, error) {
	why, _, err := ValidateDrainStuck(ctx, chk, opts)
	return why, err
}

// remaining returns the cluster the check's moving pods would go to (the registered nodes that are neither
// draining nor being deleted, with the cluster's NodePools), and the reschedulable moving pods, unbound, by key.
func (chk DrainCheck) remaining() (scheduling.Snapshot, []*corev1.Pod, map[types.NamespacedName]bool) {
	var moving []*corev1.Pod
	keys := map[types.NamespacedName]bool{}
	for _, p := range chk.Moving {
		if !Reschedulable(p) {
			continue
		}
		m := scheduling.Rescheduled(p)
		moving = append(moving, m)
		keys[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = true
	}
	cluster := *chk.Cluster
	cluster.Nodes = make([]*scheduling.StateNode, 0, len(chk.Cluster.Nodes))
	for _, n := range chk.Cluster.Nodes {
		if n.InFlight || n.MarkedForDeletion || chk.Drain[n.Name] {
			continue
		}
		cluster.Nodes = append(cluster.Nodes, n)
	}
	return cluster, moving, keys
}

// ExtraCapacity plans the new NodeClaims that would make a failed DrainCheck pass: the pending and moving pods
// are planned onto the nodes there are now and then onto new capacity of the cluster's NodePools, and the new
// NodeClaims holding a moving pod, or a pending pod that has room today (the moving pods took it), are returned;
// those holding only pending pods without room today are the provisioner's. A command
// whose replacements the kube-scheduler filled with other pods launches these instead of giving up. why says
// which moving pod no new capacity can take either; no NodeClaims are returned then, since launching some would
// not let the drain go.
func ExtraCapacity(ctx context.Context, chk DrainCheck, opts scheduling.Options) (extra []*scheduling.NodeClaimPlan, why string, err error) {
	if chk.Cluster == nil {
		return nil, "", fmt.Errorf("disruption: drain check without a cluster")
	}
	cluster, moving, keys := chk.remaining()
	if len(moving) == 0 {
		return nil, "", nil
	}
	opts.Bound = scheduling.BoundNone
	// The pending pods that have room today: moving the pods may take it, and then they need the new capacity.
	fitToday := map[types.NamespacedName]bool{}
	if len(chk.Pending) > 0 {
		today := cluster
		today.NodePools, today.InstanceTypes = nil, nil
		today.Pods = chk.Pending
		plan, err := scheduling.Solve(ctx, &today, opts)
		if err != nil {
			return nil, "", fmt.Errorf("planning the pending pods before a drain: %w", err)
		}
		for _, p := range plan.Placements {
			fitToday[p.Pod] = true
		}
	}
	// The capacity other commands already planned takes pods before new capacity does: two commands displacing
	// the same pods on their way launch for them once.
	cluster.Nodes = append(cluster.Nodes, chk.Coming...)
	cluster.Pods = append(append([]*corev1.Pod(nil), chk.Pending...), moving...)
	plan, err := scheduling.Solve(ctx, &cluster, opts)
	if err != nil {
		return nil, "", fmt.Errorf("planning new capacity for the pods of the nodes to drain: %w", err)
	}
	for _, u := range plan.Unschedulable {
		if keys[u.Pod] {
			return nil, fmt.Sprintf("pod %s would not fit on new capacity either: %s", u.Pod, u.Reason), nil
		}
	}
	for _, nc := range plan.NodeClaims {
		if slices.ContainsFunc(nc.Pods, func(k types.NamespacedName) bool { return keys[k] || fitToday[k] }) {
			extra = append(extra, nc)
		}
	}
	return extra, "", nil
}

// ValidateDrainStuck is ValidateDrain that also names the moving pods that would not fit (none when the check
// passes, or when it fails only because pending pods would be left without a node).
func ValidateDrainStuck(ctx context.Context, chk DrainCheck, opts scheduling.Options) (string, []types.NamespacedName, error) {
	return validateDrain(ctx, chk, opts, "")
}

// ValidateDrainContended answers the DrainCheck as the kube-scheduler may place the pods rather than as a plan
// would: the smallest pods first, each on the node left with the most room (scheduling.Options.LeastAllocated).
// A drain that passes ValidateDrain can fail here when pods of several drains move at once: small pods take the
// empty replacement meant for a large one, and the large pod waits for new capacity. "" when every pod still
// has room.
func ValidateDrainContended(ctx context.Context, chk DrainCheck, opts scheduling.Options) (string, error) {
	opts.LeastAllocated = true
	opts.Bound = scheduling.BoundNone
	why, _, err := validateDrain(ctx, chk, opts, "if the kube-scheduler put the smallest pods on the emptiest nodes first, ")
	return why, err
}

// validateDrain is ValidateDrainStuck with the solve's options as given; prefix starts the answer.
func validateDrain(ctx context.Context, chk DrainCheck, opts scheduling.Options, prefix string) (string, []types.NamespacedName, error) {
	if chk.Cluster == nil {
		return "", nil, fmt.Errorf("disruption: drain check without a cluster")
	}
	cluster, moving, keys := chk.remaining()
	if len(moving) == 0 {
		return "", nil, nil
	}
	// Only the nodes there are now: no new NodeClaims.
	cluster.NodePools, cluster.InstanceTypes = nil, nil
	before := 0
	if len(chk.Pending) > 0 {
		cluster.Pods = chk.Pending
		plan, err := scheduling.Solve(ctx, &cluster, opts)
		if err != nil {
			return "", nil, fmt.Errorf("planning the pending pods before a drain: %w", err)
		}
		before = len(plan.Unschedulable)
	}
	cluster.Pods = append(append([]*corev1.Pod(nil), chk.Pending...), moving...)
	plan, err := scheduling.Solve(ctx, &cluster, opts)
	if err != nil {
		return "", nil, fmt.Errorf("planning the pods of the nodes to drain: %w", err)
	}
	if len(plan.Unschedulable) <= before {
		return "", nil, nil
	}
	var stuck []types.NamespacedName
	for _, u := range plan.Unschedulable {
		if keys[u.Pod] {
			stuck = append(stuck, u.Pod)
		}
	}
	for _, u := range plan.Unschedulable {
		if keys[u.Pod] {
			return fmt.Sprintf("%spod %s would not fit on the nodes there are now (%d of %d pods to move would wait): %s",
				prefix, u.Pod, len(stuck), len(moving), u.Reason), stuck, nil
		}
	}
	u := plan.Unschedulable[0]
	return fmt.Sprintf("%smoving %d pods would leave %d more pending pods without a node (pod %s: %s)",
		prefix, len(moving), len(plan.Unschedulable)-before, u.Pod, u.Reason), nil, nil
}
