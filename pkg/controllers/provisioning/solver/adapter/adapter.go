// Package adapter lets the real scheduler (pkg/scheduling) serve as the provisioner's solver.Solver: it converts
// the provisioner's snapshot into a scheduling.Snapshot and the resulting scheduling.Plan back. Switching the
// provisioner to it is one line in provisioning.NewController: solver: adapter.Scheduler{Options: ...}.
package adapter

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/settings"
)

// Scheduler is a solver.Solver backed by scheduling.Solve.
type Scheduler struct {
	Options scheduling.Options
}

// New returns the scheduler with PREFERENCE_POLICY and MIN_VALUES_POLICY from the settings.
func New(s *settings.Settings) Scheduler {
	return Scheduler{Options: scheduling.Options{PreferencePolicy: s.PreferencePolicy, MinValuesPolicy: s.MinValuesPolicy}}
}

var _ solver.Solver = Scheduler{}

// Solve implements solver.Solver. A scheduling error makes every pod unschedulable with that error as reason.
func (s Scheduler) Solve(ctx context.Context, in solver.Input) solver.Plan {
	snap, pools := Snapshot(in)
	plan, err := scheduling.Solve(ctx, snap, s.Options)
	out := solver.Plan{Existing: map[string]string{}, Unschedulable: map[string]string{}}
	if err != nil {
		for _, p := range in.Pods {
			out.Unschedulable[solver.PodKey(p)] = "scheduling failed: " + err.Error()
		}
		return out
	}
	pods := map[string]*corev1.Pod{}
	for _, p := range in.Pods {
		pods[solver.PodKey(p)] = p
	}
	for _, pl := range plan.Placements {
		out.Existing[pl.Pod.String()] = pl.Node
	}
	for _, pe := range plan.Unschedulable {
		out.Unschedulable[pe.Pod.String()] = pe.Reason
	}
	for _, nc := range plan.NodeClaims {
		pool, ok := pools[nc.NodePool]
		if !ok {
			continue
		}
		types := map[string]*cloudprovider.InstanceType{}
		for _, it := range pool.InstanceTypes {
			types[it.Name] = it
		}
		nn := solver.NewNodeClaim{NodePool: pool.NodePool, Requests: nc.Requests}
		for _, o := range nc.InstanceTypeOptions {
			if it, ok := types[o.Name]; ok {
				nn.InstanceTypes = append(nn.InstanceTypes, it)
			}
		}
		for _, r := range nc.Requirements {
			nn.Requirements = append(nn.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
				NodeSelectorRequirement: r.NodeSelectorRequirement, MinValues: r.MinValues})
		}
		for _, key := range nc.Pods {
			if p := pods[key.String()]; p != nil {
				nn.Pods = append(nn.Pods, p)
			}
		}
		out.NewNodeClaims = append(out.NewNodeClaims, nn)
	}
	return out
}

// Snapshot converts the provisioner's input. NodeClaims become StateNodes named after the NodeClaim (so placements
// map back to it), in flight until registered, whose allocatable is the room left (the provisioner already
// subtracted the pods bound to their nodes).
func Snapshot(in solver.Input) (*scheduling.Snapshot, map[string]solver.NodePoolOption) {
	snap := &scheduling.Snapshot{
		Pods:                   in.Pods,
		InstanceTypes:          map[string][]*cloudprovider.InstanceType{},
		DaemonSets:             in.DaemonSets,
		PersistentVolumeClaims: in.PersistentVolumeClaims,
		PersistentVolumes:      in.PersistentVolumes,
		StorageClasses:         in.StorageClasses,
	}
	pools := map[string]solver.NodePoolOption{}
	for _, o := range in.NodePools {
		np := o.NodePool
		pools[np.Name] = o
		sp := &scheduling.NodePool{
			Name:          np.Name,
			Weight:        np.WeightOrZero(),
			Labels:        np.Spec.Template.Labels,
			Taints:        np.Spec.Template.Spec.Taints,
			StartupTaints: np.Spec.Template.Spec.StartupTaints,
			Limits:        corev1.ResourceList(np.Spec.Limits),
			Usage:         o.Usage,
		}
		for _, r := range np.Spec.Template.Spec.Requirements {
			sp.Requirements = append(sp.Requirements, scheduling.NodeSelectorRequirementWithMinValues{
				NodeSelectorRequirement: r.NodeSelectorRequirement, MinValues: r.MinValues})
		}
		snap.NodePools = append(snap.NodePools, sp)
		snap.InstanceTypes[np.Name] = o.InstanceTypes
	}
	for _, f := range in.InFlight {
		snap.Nodes = append(snap.Nodes, &scheduling.StateNode{
			Name:        f.NodeClaim.Name,
			Labels:      f.Labels,
			Taints:      f.Taints,
			Allocatable: f.Available,
			InFlight:    f.NodeClaim.Status.NodeName == "",
			NodePool:    f.NodeClaim.NodePoolName(),
		})
	}
	return snap, pools
}
