package disruptionview

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/internal/clusterinput"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver/adapter"
	core "github.com/dovetail/dovetail/pkg/disruption"
)

// BuildSnapshot builds the decision's input from a pass's view: one candidate per NodeClaim with a registered
// Node (with its NodePool's instance types from d.CloudProvider), the cluster as the provisioner sees it (through
// d.Client), budgets' counts, pending pods and whether the cluster is busy.
//
// Commands in progress keep what they hold: their candidates and their replacements are no candidates (a
// replacement waiting for its command's pods looks empty), both are MarkedForDeletion in the cluster so that no
// simulation places pods there (the replacements' room is their command's), the candidates count as disrupting
// in budgets, and the replacements launching do not make the cluster busy. The pods of nodes being deleted and of
// the candidates of commands without replacements are Leaving: the decision holds room for them on the other
// nodes before it plans; so it does for the pods the kube-scheduler has yet to place (Queued). NodeClaims the
// provisioner found surplus (d.Plans) are MarkedForDeletion too: it deletes them once their grace ends. With neither a candidate nor a command in progress the snapshot has no cluster: there is
// nothing to decide or check.
func BuildSnapshot(ctx context.Context, d deps.Deps, v *View) (*core.Snapshot, error) {
	bound := map[string][]*corev1.Pod{}
	var pending []*corev1.Pod
	pods := withBufferRoom(d.Buffers, v)
	var queued []*corev1.Pod
	for _, p := range pods {
		switch {
		case solver.IsProvisionable(p):
			pending = append(pending, p)
		case solver.AwaitingScheduler(p):
			queued = append(queued, p)
		}
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		bound[p.Spec.NodeName] = append(bound[p.Spec.NodeName], p)
	}
	snap := &core.Snapshot{
		Now:                  v.Now,
		NodePools:            v.NodePools,
		PodDisruptionBudgets: v.PodDisruptionBudgets,
		Disrupting:           map[string]int{},
		NodeCounts:           map[string]int{},
	}
	active := activeCommands(v)
	// held are the cluster's node names (Node names, or NodeClaim names while in flight) that commands in
	// progress hold.
	held := map[string]bool{}
	var moving, leaving []*corev1.Pod
	types := map[string][]*cloudprovider.InstanceType{}
	for i := range v.Claims {
		nc := &v.Claims[i]
		pool := nc.NodePoolName()
		if pool == "" {
			continue
		}
		snap.NodeCounts[pool]++
		// Records that cannot be read do not count: the controller drops them before it builds a snapshot.
		candidate := carriesCommand(nc)
		// A node node repair reboots counts against the budgets until its reboot ends, takes no pods and is no
		// candidate: its pods stay on it.
		rebooting := nc.IsTrue(karpv1.ConditionTypeRebooting)
		if !nc.DeletionTimestamp.IsZero() || candidate || rebooting {
			snap.Disrupting[pool]++
		}
		if rebooting && nc.DeletionTimestamp.IsZero() && !candidate {
			held[nc.Name] = true
			if nc.Status.NodeName != "" {
				held[nc.Status.NodeName] = true
			}
			continue
		}
		replacement := active[nc.Annotations[ReplacementForAnnotationKey]]
		if d.Plans.Surplus(nc.Name) {
			// The provisioner deletes it once its grace ends (its pods went elsewhere): pods moved there now
			// would find it gone.
			held[nc.Name] = true
			if nc.Status.NodeName != "" {
				held[nc.Status.NodeName] = true
			}
		}
		if nc.DeletionTimestamp.IsZero() && !nc.IsTrue(karpv1.ConditionTypeInitialized) && !replacement {
			// A NodeClaim still launching does not hold consolidation up (pods waiting for it do, as pending
			// pods): after a scale-out whose pods all landed elsewhere, waiting for its surplus launches cost
			// minutes. No simulation places pods on it, as Karpenter refuses moves onto uninitialized nodes:
			// evicted pods would wait for it.
			held[nc.Name] = true
			if nc.Status.NodeName != "" {
				held[nc.Status.NodeName] = true
			}
		}
		if nc.Status.NodeName != "" && v.Nodes[nc.Status.NodeName] != nil && (!nc.DeletionTimestamp.IsZero() || candidate && drainsWithoutReplacements(nc)) {
			for _, p := range bound[nc.Status.NodeName] {
				if core.Reschedulable(p) {
					leaving = append(leaving, p)
				}
			}
		}
		if candidate || replacement {
			held[nc.Name] = true
			if nc.Status.NodeName != "" {
				held[nc.Status.NodeName] = true
			}
			moving = append(moving, bound[nc.Status.NodeName]...)
			continue
		}
		node := v.Nodes[nc.Status.NodeName]
		if node == nil || nc.Status.NodeName == "" {
			continue
		}
		if np := v.NodePools[pool]; np != nil && np.IsStatic() {
			// A static NodePool's nodes are never consolidated; their drift is replaced by the static
			// NodePool controller (pkg/controllers/nodepool/static), replacement first.
			continue
		}
		if _, ok := types[pool]; !ok && v.NodePools[pool] != nil {
			its, err := d.CloudProvider.GetInstanceTypes(ctx, v.NodePools[pool])
			if err != nil {
				// Without prices its nodes can still be deleted, never replaced by something "cheaper".
				log.FromContext(ctx).V(1).Info("no instance types for nodepool", "nodepool", pool, "error", err.Error())
			}
			types[pool] = its
		}
		cand := core.CandidateFrom(nc, node, bound[node.Name], types[pool])
		cand.Replacement = nc.Annotations[ReplacementForAnnotationKey] != ""
		snap.Candidates = append(snap.Candidates, cand)
		moving = append(moving, bound[node.Name]...)
	}
	snap.Pending = pending
	snap.Leaving = leaving
	snap.Queued = queued
	if len(snap.Candidates) == 0 && len(active) == 0 {
		return snap, nil
	}
	in, err := clusterinput.Build(ctx, d, nil, pods, v.Claims, append(append(moving, pending...), queued...))
	if err != nil {
		return nil, fmt.Errorf("gathering the cluster for disruption: %w", err)
	}
	snap.Cluster, _ = adapter.Snapshot(in)
	for _, n := range snap.Cluster.Nodes {
		if held[n.Name] {
			n.MarkedForDeletion = true
		}
	}
	sort.Slice(snap.Candidates, func(i, j int) bool { return snap.Candidates[i].NodeClaim < snap.Candidates[j].NodeClaim })
	return snap, nil
}

// drainsWithoutReplacements says whether a candidate's command has no replacements: its pods go to the other
// nodes (a command with replacements has their room held for its pods).
func drainsWithoutReplacements(nc *karpv1.NodeClaim) bool {
	r, ok, err := RecordOf(nc)
	return ok && err == nil && r.Replacements == 0
}

// activeCommands are the IDs of the commands in progress: records that can be read on NodeClaims not being
// deleted.
func activeCommands(v *View) map[string]bool {
	out := map[string]bool{}
	for i := range v.Claims {
		nc := &v.Claims[i]
		if r, ok, err := RecordOf(nc); ok && err == nil && nc.DeletionTimestamp.IsZero() {
			out[r.ID] = true
		}
	}
	return out
}

// withBufferRoom returns the view's pods plus the virtual pods of
// CapacityBuffers bound where the provisioner's last pass keeps their room (see deps.Buffers): consolidation then
// treats buffer room as needed, so a node holding it is not empty, and removing it must leave (or replace) room
// for its buffer pods like for real ones.
func withBufferRoom(b *deps.Buffers, v *View) []*corev1.Pod {
	if b == nil {
		return v.Pods
	}
	pods := append([]*corev1.Pod(nil), v.Pods...)
	for i := range v.Claims {
		nc := &v.Claims[i]
		node := nc.Status.NodeName
		if node == "" || v.Nodes[node] == nil {
			continue
		}
		for _, p := range append(b.Room(node), b.Room(nc.Name)...) {
			bound := *p
			bound.Spec.NodeName = node
			pods = append(pods, &bound)
		}
	}
	return pods
}
