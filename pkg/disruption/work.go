package disruption

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// working is the cluster as the commands decided so far in a pass leave it. It starts as a shallow copy of the
// snapshot's cluster and replaces (never modifies) the StateNodes and NodePools a command changes, so the input
// snapshot stays untouched.
type working struct {
	cluster *scheduling.Snapshot
	// receiving names the nodes earlier commands move pods onto, with the command's message ("" for nodes the
	// pods of nodes being drained are expected on).
	receiving map[string]string
	// replacements counts the replacement StateNodes added, to name them uniquely.
	replacements int
	// full caches closed copies of nodes (a node whose pods change is a new StateNode).
	full map[*scheduling.StateNode]*scheduling.StateNode
}

func newWorking(c *scheduling.Snapshot) *working {
	cl := *c
	cl.Nodes = append([]*scheduling.StateNode(nil), c.Nodes...)
	cl.NodePools = append([]*scheduling.NodePool(nil), c.NodePools...)
	cl.Pods = nil
	return &working{cluster: &cl, receiving: map[string]string{}, full: map[*scheduling.StateNode]*scheduling.StateNode{}}
}

// apply records a command: its candidates' nodes leave the cluster, the pods its simulation moved go where the
// simulation put them (onto existing nodes, using their room, or onto the replacements), and each replacement
// (or, for a terminate-first command, each node its simulation planned) joins as an in-flight node with exactly
// the room its pods take, so that later simulations count its pods (topology spread, affinity) but put nothing
// more on it.
func (w *working) apply(cmd *Command, sim *simulation) {
	gone := map[string]bool{}
	for _, c := range cmd.Candidates {
		gone[c.Node] = true
	}
	nodes := make([]*scheduling.StateNode, 0, len(w.cluster.Nodes)+len(cmd.Replacements))
	for _, n := range w.cluster.Nodes {
		if !gone[n.Name] {
			nodes = append(nodes, n)
		}
	}
	w.cluster.Nodes = nodes
	if sim == nil || sim.plan == nil {
		return
	}
	w.place(sim.plan.Placements, sim.pods, cmd.Message())
	launched := cmd.Replacements
	if cmd.Decision == DecisionTerminateFirst {
		// The provisioner launches these once the candidates are gone; later simulations count them all the same.
		launched = sim.Replacements
	}
	for _, r := range launched {
		w.replacements++
		name := fmt.Sprintf("disruption-replacement-%d", w.replacements)
		labels := map[string]string{}
		for k, v := range r.Labels {
			labels[k] = v
		}
		labels[karpv1.NodePoolLabelKey] = r.NodePool
		labels[corev1.LabelInstanceTypeStable] = r.InstanceType
		labels[karpv1.CapacityTypeLabelKey] = r.CapacityType
		if r.Zone != "" {
			labels[corev1.LabelTopologyZone] = r.Zone
		}
		sn := &scheduling.StateNode{Name: name, Labels: labels, Taints: r.Taints, InFlight: true, NodePool: r.NodePool,
			Allocatable: corev1.ResourceList{}}
		for _, key := range r.Pods {
			p := sim.pods[key]
			if p == nil {
				continue
			}
			sn.Pods = append(sn.Pods, placed(p, name))
			for res, q := range scheduling.PodRequests(p) {
				sum := sn.Allocatable[res]
				sum.Add(q)
				sn.Allocatable[res] = sum
			}
		}
		w.cluster.Nodes = append(w.cluster.Nodes, sn)
		w.use(r)
	}
}

// place binds copies of the placed pods to their nodes in the working cluster (copying each node it changes)
// and records the nodes as receiving, with msg: the message of the command moving them, or "" for the pods of
// nodes being drained.
func (w *working) place(placements []scheduling.Placement, pods map[types.NamespacedName]*corev1.Pod, msg string) {
	for _, node := range w.bind(placements, pods) {
		w.receiving[node] = msg
	}
}

// bind binds copies of the placed pods to their nodes in the working cluster (copying each node it changes) and
// returns the nodes it bound pods to.
func (w *working) bind(placements []scheduling.Placement, pods map[types.NamespacedName]*corev1.Pod) []string {
	index := make(map[string]int, len(w.cluster.Nodes))
	for i, n := range w.cluster.Nodes {
		index[n.Name] = i
	}
	copied := map[string]bool{}
	for _, pl := range placements {
		i, ok := index[pl.Node]
		p := pods[pl.Pod]
		if !ok || p == nil {
			continue
		}
		if !copied[pl.Node] {
			n := *w.cluster.Nodes[i]
			n.Pods = append([]*corev1.Pod(nil), n.Pods...)
			w.cluster.Nodes[i] = &n
			copied[pl.Node] = true
		}
		w.cluster.Nodes[i].Pods = append(w.cluster.Nodes[i].Pods, placed(p, pl.Node))
	}
	out := make([]string, 0, len(copied))
	for node := range copied {
		out = append(out, node)
	}
	return out
}

// toPlace returns the working cluster without new capacity, with the pods as pods waiting for a node (by key).
func (w *working) toPlace(in []*corev1.Pod) (scheduling.Snapshot, map[types.NamespacedName]*corev1.Pod) {
	pods := make(map[types.NamespacedName]*corev1.Pod, len(in))
	cluster := *w.cluster
	cluster.NodePools = nil
	cluster.Pods = make([]*corev1.Pod, 0, len(in))
	for _, p := range in {
		q := scheduling.Rescheduled(p)
		pods[podKey(q)] = q
		cluster.Pods = append(cluster.Pods, q)
	}
	return cluster, pods
}

// reserve places the pods leaving nodes being drained (Snapshot.Leaving) on the other nodes of the working
// cluster, as a scheduler would without new capacity, and takes them off the nodes they are leaving. It returns
// how many fit nowhere.
func (w *working) reserve(ctx context.Context, leaving []*corev1.Pod, opts scheduling.Options) (int, error) {
	if len(leaving) == 0 {
		return 0, nil
	}
	cluster, pods := w.toPlace(leaving)
	// The pods are no longer where they are (a topology spread must not count them twice).
	cluster.Nodes = make([]*scheduling.StateNode, len(w.cluster.Nodes))
	for i, n := range w.cluster.Nodes {
		cluster.Nodes[i] = n
		if !slices.ContainsFunc(n.Pods, func(p *corev1.Pod) bool { return pods[podKey(p)] != nil }) {
			continue
		}
		cp := *n
		cp.Pods = slices.DeleteFunc(slices.Clone(n.Pods), func(p *corev1.Pod) bool { return pods[podKey(p)] != nil })
		cluster.Nodes[i] = &cp
	}
	opts.Bound = scheduling.BoundNone
	plan, err := scheduling.Solve(ctx, &cluster, opts)
	if err != nil {
		return 0, fmt.Errorf("placing the pods of nodes being drained: %w", err)
	}
	w.cluster.Nodes = cluster.Nodes
	w.place(plan.Placements, pods, "")
	return len(plan.Unschedulable), nil
}

// hold places the pods the kube-scheduler has yet to place (Snapshot.Queued) on the working cluster's nodes other
// than those in avoid, as a scheduler would without new capacity, so that no simulation counts on the room they
// are about to take. Unlike the pods of nodes being drained, they make no node receiving: where they land is the
// kube-scheduler's guess, not a move of this pass. It returns how many fit nowhere (the provisioner's).
func (w *working) hold(ctx context.Context, queued []*corev1.Pod, avoid map[string]bool, opts scheduling.Options) (int, error) {
	if len(queued) == 0 {
		return 0, nil
	}
	cluster, pods := w.toPlace(queued)
	if len(avoid) > 0 {
		cluster.Nodes = slices.Clone(w.cluster.Nodes)
		for i, n := range cluster.Nodes {
			if avoid[n.Name] && !n.MarkedForDeletion {
				cp := *n
				cp.MarkedForDeletion = true
				cluster.Nodes[i] = &cp
			}
		}
	}
	opts.Bound = scheduling.BoundNone
	plan, err := scheduling.Solve(ctx, &cluster, opts)
	if err != nil {
		return 0, fmt.Errorf("placing the pods the kube-scheduler has yet to place: %w", err)
	}
	w.bind(plan.Placements, pods)
	return len(plan.Unschedulable), nil
}

// use adds a replacement's capacity to its NodePool's usage, so that later simulations respect the NodePool's
// limits with the replacement launched (the candidates still count until they are gone).
func (w *working) use(r *scheduling.NodeClaimPlan) {
	var capacity corev1.ResourceList
	for _, it := range w.cluster.InstanceTypes[r.NodePool] {
		if it.Name == r.InstanceType {
			capacity = it.Capacity
			break
		}
	}
	for i, np := range w.cluster.NodePools {
		if np == nil || np.Name != r.NodePool || len(np.Limits) == 0 {
			continue
		}
		cp := *np
		cp.Usage = np.Usage.DeepCopy()
		if cp.Usage == nil {
			cp.Usage = corev1.ResourceList{}
		}
		for res, q := range capacity {
			sum := cp.Usage[res]
			sum.Add(q)
			cp.Usage[res] = sum
		}
		n := cp.Usage[scheduling.ResourceNodes]
		n.Add(*resource.NewQuantity(1, resource.DecimalSI))
		cp.Usage[scheduling.ResourceNodes] = n
		w.cluster.NodePools[i] = &cp
	}
}

// placed is a copy of a moved pod bound to node.
func placed(p *corev1.Pod, node string) *corev1.Pod {
	out := p.DeepCopy()
	out.Spec.NodeName = node
	return out
}

func podKey(p *corev1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
}

// PassPlan is the plan a pass's commands carry out together, for checking (e.g. with pkg/scheduling/oracle): the
// cluster without any command's candidate nodes, with the candidates' reschedulable pods pending, and the plan that
// puts those pods where the commands do (Placements, and Replacements renamed "<command index>-<name>" so that
// names are unique across commands).
func PassPlan(cluster *scheduling.Snapshot, cmds []*Command) (*scheduling.Snapshot, *scheduling.Plan) {
	gone := map[string]bool{}
	out := *cluster
	out.Pods = nil
	plan := &scheduling.Plan{}
	for i, cmd := range cmds {
		for _, c := range cmd.Candidates {
			gone[c.Node] = true
			for _, p := range c.reschedulablePods() {
				moved := scheduling.Rescheduled(p)
				out.Pods = append(out.Pods, moved)
			}
		}
		plan.Placements = append(plan.Placements, cmd.Placements...)
		for _, r := range cmd.Replacements {
			cp := *r
			cp.Name = fmt.Sprintf("%d-%s", i, r.Name)
			plan.NodeClaims = append(plan.NodeClaims, &cp)
			plan.Cost += r.Price
		}
	}
	out.Nodes = nil
	for _, n := range cluster.Nodes {
		if !gone[n.Name] {
			out.Nodes = append(out.Nodes, n)
		}
	}
	return &out, plan
}

// closedTo is the working cluster with the named nodes closed to new pods: they stay, with their pods (which
// still count for topology spread and affinity), but with exactly the room their pods take.
func (w *working) closedTo(names map[string]bool) *scheduling.Snapshot {
	if len(names) == 0 {
		return w.cluster
	}
	out := *w.cluster
	out.Nodes = make([]*scheduling.StateNode, len(w.cluster.Nodes))
	for i, n := range w.cluster.Nodes {
		if !names[n.Name] {
			out.Nodes[i] = n
			continue
		}
		if f, ok := w.full[n]; ok {
			out.Nodes[i] = f
			continue
		}
		full := *n
		full.Allocatable = corev1.ResourceList{}
		for _, p := range n.Pods {
			for res, q := range scheduling.PodRequests(p) {
				sum := full.Allocatable[res]
				sum.Add(q)
				full.Allocatable[res] = sum
			}
		}
		w.full[n] = &full
		out.Nodes[i] = &full
	}
	return &out
}

// close keeps later commands' pods off the named node for the rest of the pass (a node being rebooted): its room
// is what its own pods take.
func (w *working) close(name string) {
	w.cluster.Nodes = w.closedTo(map[string]bool{name: true}).Nodes
}
