// Package adapter lets the real scheduler (pkg/scheduling) serve as the provisioner's solver.Solver: it converts
// the provisioner's snapshot into a scheduling.Snapshot and the resulting scheduling.Plan back.
// provisioning.NewController solves with New(settings).
package adapter

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/scheduling/adapt"
	"github.com/dovetail/dovetail/pkg/settings"
)

// Scheduler is a solver.Solver backed by scheduling.Solve.
type Scheduler struct {
	Options scheduling.Options
}

// New returns the scheduler with PREFERENCE_POLICY and MIN_VALUES_POLICY from the settings. It computes no lower
// bound: nothing in the controllers reads it, and the pattern bound would cost tenths of a second a pass.
func New(s *settings.Settings) Scheduler {
	return Scheduler{Options: scheduling.Options{PreferencePolicy: s.PreferencePolicy, MinValuesPolicy: s.MinValuesPolicy,
		Bound: scheduling.BoundNone}}
}

var _ solver.Solver = Scheduler{}

// Solve implements solver.Solver. A scheduling error makes every pod unschedulable with that error as reason.
func (s Scheduler) Solve(ctx context.Context, in solver.Input) solver.Plan {
	snap, pools, pinned := snapshot(in)
	out := solver.Plan{Existing: map[string]string{}, Unschedulable: map[string]string{}, UnschedulableCodes: map[string]string{}}
	if in.DRAProblem != "" {
		// Claims cannot be planned this pass: their pods wait with the reason, the others are planned.
		kept := make([]*corev1.Pod, 0, len(snap.Pods))
		for _, p := range snap.Pods {
			if p != nil && len(p.Spec.ResourceClaims) > 0 {
				out.Unschedulable[solver.PodKey(p)] = in.DRAProblem
				out.UnschedulableCodes[solver.PodKey(p)] = string(scheduling.ReasonOther)
				continue
			}
			kept = append(kept, p)
		}
		cp := *snap
		cp.Pods = kept
		snap = &cp
	}
	plan, err := scheduling.Solve(ctx, snap, s.Options)
	if err != nil {
		for _, p := range in.Pods {
			out.Unschedulable[solver.PodKey(p)] = "scheduling failed: " + err.Error()
			out.UnschedulableCodes[solver.PodKey(p)] = string(scheduling.ReasonOther)
		}
		return out
	}
	pods := map[string]*corev1.Pod{}
	for _, p := range in.Pods {
		pods[solver.PodKey(p)] = p
	}
	for key, name := range pinned {
		out.Existing[key] = name
	}
	for _, pl := range plan.Placements {
		out.Existing[pl.Pod.String()] = pl.Node
	}
	for _, pe := range plan.Unschedulable {
		out.Unschedulable[pe.Pod.String()] = pe.Reason
		out.UnschedulableCodes[pe.Pod.String()] = string(pe.Code)
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

// Snapshot converts the provisioner's input. Nodes become StateNodes with the pods bound to them; NodeClaims
// without a registered Node become in-flight StateNodes named after the NodeClaim (so placements map back to
// it), whose allocatable is what every instance type they allow offers. A Node whose in-flight NodeClaim has not
// registered it yet is left out: the NodeClaim stands for it until registration (counting both offered the same
// machine twice, and the plan put pods on the unregistered Node and on its NodeClaim at once). Pinned pods
// (in.Pinned) are added to their node's pods instead of being planned.
func Snapshot(in solver.Input) (*scheduling.Snapshot, map[string]solver.NodePoolOption) {
	snap, pools, _ := snapshot(in)
	return snap, pools
}

// snapshot is Snapshot that also returns the pinned pods it placed (namespace/name to node name).
func snapshot(in solver.Input) (*scheduling.Snapshot, map[string]solver.NodePoolOption, map[string]string) {
	snap := &scheduling.Snapshot{
		InstanceTypes:          map[string][]*cloudprovider.InstanceType{},
		DaemonSets:             in.DaemonSets,
		PersistentVolumeClaims: in.PersistentVolumeClaims,
		PersistentVolumes:      in.PersistentVolumes,
		StorageClasses:         in.StorageClasses,
		DRA:                    in.DRA,
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
	unregistered := map[string]bool{}
	for _, f := range in.InFlight {
		if f.NodeClaim.Status.NodeName == "" {
			unregistered[f.NodeClaim.Name] = true
		}
	}
	registered := map[string]bool{}
	for _, n := range in.Nodes {
		if n.NodeClaim != nil && unregistered[n.NodeClaim.Name] {
			continue // its NodeClaim stands for it until registration
		}
		snap.Nodes = append(snap.Nodes, stateNode(n))
		registered[n.Node.Name] = true
	}
	for _, f := range in.InFlight {
		if f.NodeClaim.Status.NodeName != "" && registered[f.NodeClaim.Status.NodeName] {
			continue // its Node stands for it, with the pods bound there
		}
		snap.Nodes = append(snap.Nodes, &scheduling.StateNode{
			Name:        f.NodeClaim.Name,
			Labels:      f.Labels,
			Taints:      f.Taints,
			Allocatable: f.Available,
			InFlight:    true,
			NodePool:    f.NodeClaim.NodePoolName(),
		})
	}
	var pinned map[string]string
	snap.Pods, pinned = pin(in, snap.Nodes)
	return snap, pools, pinned
}

// pin adds the pinned pods of in to the pods of their StateNode and returns the pods left to plan and the
// pinned ones placed (namespace/name to node name). Pods pinned to a node the snapshot does not hold are planned.
func pin(in solver.Input, nodes []*scheduling.StateNode) ([]*corev1.Pod, map[string]string) {
	if len(in.Pinned) == 0 {
		return in.Pods, nil
	}
	byName := map[string]*scheduling.StateNode{}
	for _, n := range nodes {
		byName[n.Name] = n
	}
	placed := map[string]string{}
	var rest []*corev1.Pod
	for _, p := range in.Pods {
		key := solver.PodKey(p)
		n := byName[in.Pinned[key]]
		if n == nil || n.MarkedForDeletion {
			rest = append(rest, p)
			continue
		}
		n.Pods = append(slices.Clip(n.Pods), p)
		placed[key] = n.Name
	}
	return rest, placed
}

// ephemeralTaints are put on a new Node by its kubelet, the node lifecycle controller, the cloud controller
// manager or Dovetail's bootstrap, and go away on their own while the node initializes.
var ephemeralTaints = []string{
	corev1.TaintNodeNotReady,
	corev1.TaintNodeUnreachable,
	karpv1.UnregisteredTaintKey,
	karpv1.CloudProviderUninitializedTaintKey,
}

// stateNode converts a Node. Until a Dovetail node is initialized, the taints that initialization removes (its
// NodeClaim's startup taints and the ephemeral ones) are ignored, and its NodeClaim's allocatable stands in for
// a status the kubelet has not reported yet: otherwise every pod meant for it would launch another node.
func stateNode(n solver.ExistingNode) *scheduling.StateNode {
	sn := adapt.Node(n.Node, n.Pods)
	nc := n.NodeClaim
	if nc == nil {
		return sn
	}
	if !nc.DeletionTimestamp.IsZero() {
		sn.MarkedForDeletion = true
	}
	if nc.IsTrue(karpv1.ConditionTypeInitialized) {
		return sn
	}
	kept := sn.Taints[:0]
	for _, t := range sn.Taints {
		if slices.Contains(ephemeralTaints, t.Key) || slices.ContainsFunc(nc.Spec.StartupTaints, func(s corev1.Taint) bool { return s.MatchTaint(&t) }) {
			continue
		}
		kept = append(kept, t)
	}
	sn.Taints = kept
	if len(sn.Allocatable) == 0 {
		sn.Allocatable = nc.Status.Allocatable.DeepCopy()
	}
	// Resources the NodeClaim expects but the Node does not report yet (an extended resource whose device plugin,
	// or a NodeOverlay's, has not registered it) count as the NodeClaim says until initialization checks them.
	for name, q := range nc.Status.Allocatable {
		if _, ok := sn.Allocatable[name]; !ok {
			sn.Allocatable[name] = q.DeepCopy()
		}
	}
	return sn
}
