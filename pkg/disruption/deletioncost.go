package disruption

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// DeletionCostNodesPerPass caps the ranked and cleared nodes whose pods one DeletionCosts call changes (nodes
// being deleted are not counted), as Karpenter v1.15 caps its writes: about 1,500 pod writes a minute at 30 pods
// a node.
const DeletionCostNodesPerPass = 50

// DeletionCostWrite is one pod's controller.kubernetes.io/pod-deletion-cost to write (Value), or to remove
// (Remove).
type DeletionCostWrite struct {
	Pod    types.NamespacedName
	Node   string
	Value  int32
	Remove bool
}

// DeletionCosts returns the pod-deletion-cost writes that make a ReplicaSet scaling down remove first the pods of
// the nodes disruption would take first (Karpenter v1.15's PodDeletionCostManagement). Only pods a ReplicaSet
// controls are written: the ReplicaSet controller is the annotation's only reader. The nodes fall in three groups:
//   - being deleted: every pod gets math.MinInt32;
//   - rankable (nothing blocks disruption, every pod outside kube-system is recreated elsewhere by a ReplicaSet,
//     Job or DaemonSet, and the node is drifted or its NodePool consolidates): drifted first, then by hourly
//     price over the cost of moving the pods, highest first, then by name; within the disruption budget of each
//     NodePool (drift's for drifted nodes, Underutilized's otherwise), the i-th of n gets -n+i, so the first
//     goes first;
//   - the others (and rankable nodes past their budget) lose the annotation.
//
// Pods already holding their value are not written, and at most maxNodes nodes of the last two groups have pods
// written. The writes are sorted by node then pod.
func DeletionCosts(snap *Snapshot, maxNodes int) ([]DeletionCostWrite, error) {
	var going, drifted, normal, other []*Candidate
	for _, c := range sortedCandidates(snap.Candidates) {
		switch {
		case c.Deleting || disruptedTaint(snap, c):
			going = append(going, c)
		case rankable(snap, c):
			if c.Drifted != "" {
				drifted = append(drifted, c)
			} else {
				normal = append(normal, c)
			}
		default:
			other = append(other, c)
		}
	}
	ratio := map[*Candidate]float64{}
	for _, c := range append(append([]*Candidate(nil), drifted...), normal...) {
		ratio[c] = c.Price / nodeDisruptionCost(c.Pods, true)
	}
	byRatio := func(cs []*Candidate) {
		sort.SliceStable(cs, func(i, j int) bool {
			if ratio[cs[i]] != ratio[cs[j]] {
				return ratio[cs[i]] > ratio[cs[j]]
			}
			return cs[i].Node < cs[j].Node
		})
	}
	byRatio(drifted)
	byRatio(normal)
	within := func(cs []*Candidate, reason karpv1.DisruptionReason) (in, over []*Candidate, err error) {
		left := map[string]int{}
		for _, c := range cs {
			n, ok := left[c.NodePool]
			if !ok {
				a, err := AllowedDisruptions(snap.NodePools[c.NodePool], snap.Now, snap.NodeCounts[c.NodePool], snap.Disrupting[c.NodePool])
				if err != nil {
					return nil, nil, fmt.Errorf("disruption budgets of nodepool %s: %w", c.NodePool, err)
				}
				n = a[reason]
			}
			if n > 0 {
				in = append(in, c)
				n--
			} else {
				over = append(over, c)
			}
			left[c.NodePool] = n
		}
		return in, over, nil
	}
	drifted, driftOver, err := within(drifted, karpv1.DisruptionReasonDrifted)
	if err != nil {
		return nil, err
	}
	normal, normalOver, err := within(normal, karpv1.DisruptionReasonUnderutilized)
	if err != nil {
		return nil, err
	}
	ranked := append(drifted, normal...)
	other = append(append(other, driftOver...), normalOver...)

	var out []DeletionCostWrite
	write := func(c *Candidate, value int32, remove bool) bool {
		var ws []DeletionCostWrite
		for _, p := range c.Pods {
			if !controlledByReplicaSet(p) {
				continue
			}
			v, has := p.Annotations[corev1.PodDeletionCost]
			if remove && !has || !remove && v == strconv.Itoa(int(value)) {
				continue
			}
			ws = append(ws, DeletionCostWrite{Pod: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, Node: c.Node, Value: value, Remove: remove})
		}
		out = append(out, ws...)
		return len(ws) > 0
	}
	for _, c := range going {
		write(c, math.MinInt32, false)
	}
	budget := maxNodes
	for i, c := range ranked {
		if budget <= 0 {
			break
		}
		if write(c, int32(i-len(ranked)), false) {
			budget--
		}
	}
	for _, c := range other {
		if budget <= 0 {
			break
		}
		if write(c, 0, true) {
			budget--
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].Pod.String() < out[j].Pod.String()
	})
	return out, nil
}

// disruptedTaint reports whether the candidate's node carries the karpenter.sh/disrupted taint of a command in
// progress.
func disruptedTaint(snap *Snapshot, c *Candidate) bool {
	if snap.Cluster == nil {
		return false
	}
	for _, n := range snap.Cluster.Nodes {
		if n != nil && n.Name == c.Node {
			for _, t := range n.Taints {
				if t.Key == karpv1.DisruptedTaintKey {
					return true
				}
			}
			return false
		}
	}
	return false
}

// rankable reports whether a disruption method could take the candidate and its pods would come back elsewhere.
func rankable(snap *Snapshot, c *Candidate) bool {
	if blocker(c, snap.NodePools, snap.PodDisruptionBudgets, snap.Now) != nil || c.Price <= 0 {
		return false
	}
	for _, p := range c.Pods {
		if p.Namespace == metav1.NamespaceSystem || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		o := metav1.GetControllerOfNoCopy(p)
		if o == nil || !(o.Kind == "ReplicaSet" && o.APIVersion == "apps/v1" || o.Kind == "DaemonSet" && o.APIVersion == "apps/v1" || o.Kind == "Job" && o.APIVersion == "batch/v1") {
			return false
		}
	}
	if c.Drifted != "" {
		return true
	}
	np := snap.NodePools[c.NodePool]
	return !(np.Spec.Disruption.ConsolidateAfter.IsNever() && np.Spec.Disruption.ConsolidateAfter.Raw != nil)
}

func controlledByReplicaSet(p *corev1.Pod) bool {
	o := metav1.GetControllerOfNoCopy(p)
	return o != nil && o.Kind == "ReplicaSet" && o.APIVersion == "apps/v1"
}
