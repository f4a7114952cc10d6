package provisioning

import (
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/capacitybuffer"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/internal/clusterinput"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// nomination is a pending pod whose status.nominatedNodeName is to become node ("" clears it).
type nomination struct {
	pod  *corev1.Pod
	node string
}

// plannedNode returns the name of the Node a pod planned on name (a Node, or an in-flight NodeClaim) goes to,
// or "" while that node does not exist.
func plannedNode(name string, nodes map[string]bool, claimNodes map[string]string) string {
	if nodes[name] {
		return name
	}
	if n := claimNodes[name]; n != "" && nodes[n] {
		return n
	}
	return ""
}

// nominations returns the changes that make the pending pods' status.nominatedNodeName follow the plan: the
// planned Node's name when that Node exists (a pod planned on a NodeClaim gets its Node once it registered),
// empty when the pod is planned on a node that does not exist yet, on a new NodeClaim, or nowhere. ours holds
// the nominations this controller set, by pod UID; a pod nominated by someone else (the kube-scheduler, for
// preemption) is left alone. At most budget nodes carry nominations of ours (0: no limit; see
// deps.NominationBudget): the nodes that keep theirs count first, then new nodes in the order of the pods.
func nominations(in solver.Input, plan solver.Plan, ours map[types.UID]string, budget int) []nomination {
	nodes := map[string]bool{}
	for _, n := range in.Nodes {
		nodes[n.Node.Name] = true
	}
	claimNodes := map[string]string{}
	for _, f := range in.InFlight {
		claimNodes[f.NodeClaim.Name] = f.NodeClaim.Status.NodeName
	}
	want := make([]string, len(in.Pods))
	onNode := map[string][]int{}
	for i, p := range in.Pods {
		cur := p.Status.NominatedNodeName
		if cur != "" && cur != ours[p.UID] {
			continue
		}
		if name, ok := plan.Existing[solver.PodKey(p)]; ok {
			want[i] = plannedNode(name, nodes, claimNodes)
		}
		if want[i] != "" {
			onNode[want[i]] = append(onNode[want[i]], i)
		}
	}
	// Not every pod planned on a node may be nominated there (scheduling.NominationsOnOneNode); the ones
	// nominated there already go first, so a pass does not move nominations between pods.
	for _, idx := range onNode {
		sort.SliceStable(idx, func(a, b int) bool {
			return in.Pods[idx[a]].Status.NominatedNodeName == want[idx[a]] && in.Pods[idx[b]].Status.NominatedNodeName != want[idx[b]]
		})
		pods := make([]*corev1.Pod, len(idx))
		for k, i := range idx {
			pods[k] = in.Pods[i]
		}
		for k, ok := range scheduling.NominationsOnOneNode(pods) {
			if !ok {
				want[idx[k]] = ""
			}
		}
	}
	if budget > 0 {
		// The nodes whose nominations of ours stay (pods of ours kept where they are, wherever the pass
		// sees them: a pod the snapshot left out keeps its nomination), then new nodes while the budget lasts.
		nominatedNodes := map[string]bool{}
		inPass := map[types.UID]bool{}
		for i, p := range in.Pods {
			inPass[p.UID] = true
			if cur := p.Status.NominatedNodeName; cur != "" && cur == ours[p.UID] && want[i] == cur {
				nominatedNodes[cur] = true
			}
		}
		for uid, node := range ours {
			if !inPass[uid] {
				nominatedNodes[node] = true
			}
		}
		for i, p := range in.Pods {
			cur := p.Status.NominatedNodeName
			if want[i] == "" || want[i] == cur || (cur != "" && cur != ours[p.UID]) || nominatedNodes[want[i]] {
				continue
			}
			if len(nominatedNodes) >= budget {
				want[i] = ""
				continue
			}
			nominatedNodes[want[i]] = true
		}
	}
	var out []nomination
	for i, p := range in.Pods {
		cur := p.Status.NominatedNodeName
		if cur != "" && cur != ours[p.UID] {
			continue
		}
		if want[i] != cur {
			out = append(out, nomination{pod: p, node: want[i]})
		}
	}
	return out
}

// surplusGrace is how long an in-flight NodeClaim must have been surplus, pass after pass, before it is
// deleted: a pod the kube-scheduler is binding to it at the moment of one snapshot shows in the next.
const surplusGrace = 10 * time.Second

// undecidedHold is how much longer than surplusGrace a surplus NodeClaim is kept while the kube-scheduler has
// pods it has not decided about (see releaseSurplus).
const undecidedHold = 30 * time.Second

// surplus returns the in-flight NodeClaims the plan has no use for while pods are being placed: no pending pod
// planned on them or their Node, no pod but DaemonSet pods bound to their Node and none ever scheduled there
// (status.lastPodEventTime unset: a node emptied by a workload is consolidation's business), not being deleted,
// not marked do-not-disrupt, and either of a NodePool that consolidates (consolidateAfter is not Never) or
// launched by the provisioner for pods (annotated with the pods planned on it): a NodePool that never
// consolidates keeps the nodes it got otherwise, but not a launch whose pods all went elsewhere. They are the
// nodes left empty when the kube-scheduler put their pods elsewhere; the pods still pending are planned from
// where the others actually landed, so keeping these would leave them empty.
func surplus(in solver.Input, plan solver.Plan) []*karpv1.NodeClaim {
	used := map[string]bool{}
	for _, name := range plan.Existing {
		used[name] = true
	}
	bound := map[string]int{}
	for _, n := range in.Nodes {
		for _, p := range n.Pods {
			if !clusterinput.OwnedByDaemonSet(p) {
				bound[n.Node.Name]++
			}
		}
	}
	consolidates := map[string]bool{}
	for _, o := range in.NodePools {
		ca := o.NodePool.Spec.Disruption.ConsolidateAfter
		consolidates[o.NodePool.Name] = ca.IsZero() || !ca.IsNever()
	}
	var out []*karpv1.NodeClaim
	for _, f := range in.InFlight {
		nc := f.NodeClaim
		node := nc.Status.NodeName
		switch {
		case used[nc.Name], node != "" && used[node], node != "" && bound[node] > 0:
		case !nc.Status.LastPodEventTime.IsZero():
		case !nc.DeletionTimestamp.IsZero(), nc.Annotations[karpv1.DoNotDisruptAnnotationKey] == karpv1.DoNotDisruptValue:
		case !consolidates[nc.NodePoolName()] && nc.Annotations[deps.PlannedPodsAnnotationKey] == "":
		default:
			out = append(out, nc)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// placement is what a pass left for the next one: the in-flight NodeClaim (by name) each pending pod was planned
// on, and for each of those NodeClaims the pods bound to its Node or planned on it then.
type placement struct {
	planned  map[types.UID]string
	expected map[string]map[types.UID]bool
}

// recordPlacement builds the placement of a pass from its input and the pods it planned on each NodeClaim or
// Node (by the name the plan uses: a NodeClaim's, or the Node's once it registered; NodeClaims created by the
// pass included). Pods planned on Nodes no NodeClaim launched are left out: only in-flight NodeClaims hold pins.
func recordPlacement(in solver.Input, planned map[string][]deps.PodRef, created []string) placement {
	claimOf := claimNames(in)
	for _, name := range created {
		claimOf[name] = name
	}
	out := placement{planned: map[types.UID]string{}, expected: map[string]map[types.UID]bool{}}
	add := func(claim string, uid types.UID) {
		if out.expected[claim] == nil {
			out.expected[claim] = map[types.UID]bool{}
		}
		out.expected[claim][uid] = true
	}
	for name, refs := range planned {
		claim, ok := claimOf[name]
		if !ok {
			continue
		}
		for _, r := range refs {
			out.planned[r.UID] = claim
			add(claim, r.UID)
		}
	}
	for _, n := range in.Nodes {
		if claim, ok := claimOf[n.Node.Name]; ok {
			for _, p := range n.Pods {
				add(claim, p.UID)
			}
		}
	}
	return out
}

// annotatePlanned records on a NodeClaim about to be created the UIDs of the real pods planned on it
// (deps.PlannedPodsAnnotationKey), for restorePlacement.
func annotatePlanned(nc *karpv1.NodeClaim, pods []*corev1.Pod) {
	var uids []string
	for _, p := range pods {
		if capacitybuffer.IsVirtual(p) || p.UID == "" {
			continue
		}
		if len(uids) == deps.MaxPlannedPodsAnnotated {
			break
		}
		uids = append(uids, string(p.UID))
	}
	if len(uids) == 0 {
		return
	}
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[deps.PlannedPodsAnnotationKey] = strings.Join(uids, ",")
}

// restorePlacement is the placement a restarted provisioner starts from: each in-flight NodeClaim's pods as its
// creator planned them (annotatePlanned), and the pods bound to its Node by now. Later passes of the process
// before may have planned more pods there, which the annotation does not list; taking the bound ones as expected
// keeps those from contradicting the plan (pins still check that the pinned pods fit the room left).
func restorePlacement(in solver.Input) placement {
	out := placement{planned: map[types.UID]string{}, expected: map[string]map[types.UID]bool{}}
	for _, f := range in.InFlight {
		v := f.NodeClaim.Annotations[deps.PlannedPodsAnnotationKey]
		if v == "" {
			continue
		}
		name := f.NodeClaim.Name
		out.expected[name] = map[types.UID]bool{}
		for _, uid := range strings.Split(v, ",") {
			out.planned[types.UID(uid)] = name
			out.expected[name][types.UID(uid)] = true
		}
	}
	claimOf := claimNames(in)
	for _, n := range in.Nodes {
		if claim, ok := claimOf[n.Node.Name]; ok && out.expected[claim] != nil {
			for _, p := range n.Pods {
				out.expected[claim][p.UID] = true
			}
		}
	}
	return out
}

// claimNames maps the name of every in-flight NodeClaim, and of the Node each registered, to the NodeClaim's name.
func claimNames(in solver.Input) map[string]string {
	out := map[string]string{}
	for _, f := range in.InFlight {
		out[f.NodeClaim.Name] = f.NodeClaim.Name
		if n := f.NodeClaim.Status.NodeName; n != "" {
			out[n] = f.NodeClaim.Name
		}
	}
	return out
}

// pins keeps pending pods on the in-flight NodeClaim the previous pass planned them on (solver.Input.Pinned:
// namespace/name to the NodeClaim's name, or its Node's once registered). Solved afresh, the pods of a scale-out
// moved between in-flight NodeClaims pass after pass: the hostname-spread pods, placed first, took the NodeClaims
// launched for large pods, and the large pods got launches of their own. A NodeClaim keeps its pins only while
// what happened since agrees with the plan: every pod bound to its Node (DaemonSet pods aside) was bound there
// or planned there by the previous pass, and the pinned pods fit its room. Otherwise the kube-scheduler put a pod
// elsewhere than planned, and the NodeClaim's pending pods are planned again from where pods actually are, with
// the room the displaced pods' own NodeClaims now have.
func pins(in solver.Input, prev placement) map[string]string {
	if len(prev.planned) == 0 {
		return nil
	}
	claimOf := claimNames(in)
	nodes := map[string]bool{}
	for _, n := range in.Nodes {
		nodes[n.Node.Name] = true
	}
	current := map[string]string{}
	room := map[string]corev1.ResourceList{}
	for _, f := range in.InFlight {
		name := f.NodeClaim.Name
		current[name] = name
		if n := f.NodeClaim.Status.NodeName; n != "" && nodes[n] {
			current[name] = n
		}
		room[name] = f.Available
	}
	contradicted := map[string]bool{}
	for _, n := range in.Nodes {
		claim, ok := claimOf[n.Node.Name]
		if !ok {
			continue
		}
		for _, p := range n.Pods {
			if !clusterinput.OwnedByDaemonSet(p) && !prev.expected[claim][p.UID] {
				contradicted[claim] = true
			}
		}
	}
	out := map[string]string{}
	byClaim := map[string][]*corev1.Pod{}
	for _, p := range in.Pods {
		claim, ok := prev.planned[p.UID]
		if !ok || contradicted[claim] || current[claim] == "" {
			continue
		}
		byClaim[claim] = append(byClaim[claim], p)
	}
	for claim, pods := range byClaim {
		left := room[claim]
		for _, p := range pods {
			left = solver.Subtract(left, solver.PodRequests(p))
		}
		if negative(left, room[claim]) {
			continue
		}
		for _, p := range pods {
			out[solver.PodKey(p)] = current[claim]
		}
	}
	return out
}

// negative reports whether any quantity of l that room names is below zero.
func negative(l, room corev1.ResourceList) bool {
	for name := range room {
		if q := l[name]; q.Sign() < 0 {
			return true
		}
	}
	return false
}
