package provisioning

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
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
// preemption) is left alone.
func nominations(in solver.Input, plan solver.Plan, ours map[types.UID]string) []nomination {
	nodes := map[string]bool{}
	for _, n := range in.Nodes {
		nodes[n.Node.Name] = true
	}
	claimNodes := map[string]string{}
	for _, f := range in.InFlight {
		claimNodes[f.NodeClaim.Name] = f.NodeClaim.Status.NodeName
	}
	var out []nomination
	for _, p := range in.Pods {
		want := ""
		if name, ok := plan.Existing[solver.PodKey(p)]; ok {
			want = plannedNode(name, nodes, claimNodes)
		}
		cur := p.Status.NominatedNodeName
		if cur != "" && cur != ours[p.UID] {
			continue
		}
		if want != cur {
			out = append(out, nomination{pod: p, node: want})
		}
	}
	return out
}

// surplusGrace is how long an in-flight NodeClaim must have been surplus, pass after pass, before it is
// deleted: a pod the kube-scheduler is binding to it at the moment of one snapshot shows in the next.
const surplusGrace = 10 * time.Second

// surplus returns the in-flight NodeClaims the plan has no use for while pods are being placed: no pending pod
// planned on them or their Node, no pod but DaemonSet pods bound to their Node and none ever scheduled there
// (status.lastPodEventTime unset: a node emptied by a workload is consolidation's business), not being deleted,
// not marked do-not-disrupt, and of a NodePool that consolidates (consolidateAfter is not Never). They are the
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
			if !ownedByDaemonSet(p) {
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
		case !consolidates[nc.NodePoolName()]:
		default:
			out = append(out, nc)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func ownedByDaemonSet(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}
