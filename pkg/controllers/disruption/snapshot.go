package disruption

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver/adapter"
	core "github.com/dovetail/dovetail/pkg/disruption"
)

// snapshot builds the decision's input: one candidate per NodeClaim with a registered Node, the cluster as the
// provisioner sees it, budgets' counts and whether the cluster is busy.
func (c *Controller) snapshot(ctx context.Context, st *state) (*core.Snapshot, error) {
	bound := map[string][]*corev1.Pod{}
	var pending []*corev1.Pod
	for i := range st.pods {
		p := &st.pods[i]
		if provisioning.IsProvisionable(p) {
			pending = append(pending, p)
		}
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		bound[p.Spec.NodeName] = append(bound[p.Spec.NodeName], p)
	}
	snap := &core.Snapshot{
		Now:        st.now,
		NodePools:  st.pools,
		Disrupting: map[string]int{},
		NodeCounts: map[string]int{},
	}
	snap.PodDisruptionBudgets = st.pdbs
	var launching []string
	var moving []*corev1.Pod
	types := map[string][]*cloudprovider.InstanceType{}
	for i := range st.claims {
		nc := &st.claims[i]
		pool := nc.NodePoolName()
		if pool == "" {
			continue
		}
		snap.NodeCounts[pool]++
		if !nc.DeletionTimestamp.IsZero() || nc.Annotations[CommandAnnotationKey] != "" {
			snap.Disrupting[pool]++
		}
		if nc.DeletionTimestamp.IsZero() && !nc.IsTrue(karpv1.ConditionTypeInitialized) {
			launching = append(launching, nc.Name)
		}
		node := st.nodes[nc.Status.NodeName]
		if node == nil || nc.Status.NodeName == "" {
			continue
		}
		if _, ok := types[pool]; !ok && st.pools[pool] != nil {
			its, err := c.deps.CloudProvider.GetInstanceTypes(ctx, st.pools[pool])
			if err != nil {
				// Without prices its nodes can still be deleted, never replaced by something "cheaper".
				log.FromContext(ctx).V(1).Info("no instance types for nodepool", "nodepool", pool, "error", err.Error())
			}
			types[pool] = its
		}
		cand := core.CandidateFrom(nc, node, bound[node.Name], types[pool])
		snap.Candidates = append(snap.Candidates, cand)
		moving = append(moving, bound[node.Name]...)
	}
	snap.Pending = pending
	if len(launching) > 0 {
		snap.Busy = fmt.Sprintf("nodeclaim %s is not initialized yet", launching[0])
	}
	if len(snap.Candidates) == 0 {
		return snap, nil
	}
	in, err := provisioning.ClusterInput(ctx, c.deps, nil, st.pods, st.claims, append(moving, pending...))
	if err != nil {
		return nil, fmt.Errorf("gathering the cluster for disruption: %w", err)
	}
	snap.Cluster, _ = adapter.Snapshot(in)
	sort.Slice(snap.Candidates, func(i, j int) bool { return snap.Candidates[i].NodeClaim < snap.Candidates[j].NodeClaim })
	return snap, nil
}
