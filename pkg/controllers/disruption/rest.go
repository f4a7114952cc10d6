package disruption

import (
	"cmp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	core "github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/termination"
)

// RestRecheck is the longest a cluster at rest goes without a decision: a decision that found nothing to do is
// not run again while the objects it read stay as they were, until the first time-bound change it knows of (a
// budget's schedule, a do-not-disrupt duration, a replacement ceasing to be fresh, a repair toleration) or
// RestRecheck, for what it cannot see change (prices, offerings, node classes). Karpenter skips consolidation on
// an unchanged cluster the same way, for 5 minutes. At 2,000 nodes a decision costs about 1 s of CPU; run every
// PollPeriod on an idle cluster that was most of the controller's CPU at rest.
const RestRecheck = 5 * time.Minute

// restMemo is what the last decision at rest found: nothing to do, on objects whose fingerprint is key, until;
// changes is the Controller.changes count read before those objects were listed, and buffers the CapacityBuffers'
// version in key.
type restMemo struct {
	key              uint64
	until            time.Time
	changes, buffers uint64
}

// restKey fingerprints what a decision reads from the cluster's objects: every NodeClaim, pod, NodePool and
// PodDisruptionBudget as stored (their resource versions), and of each Node what decisions use (labels,
// annotations, taints, schedulability, allocatable, condition statuses), not its heartbeats; buffers is the
// version of the CapacityBuffers' room (deps.Buffers). Pods are combined in any order (the cache lists them in
// no fixed one).
func restKey(v *View, buffers uint64) uint64 {
	h := newFNV()
	for i := range v.Claims {
		h.strings("nc", v.Claims[i].Name, v.Claims[i].ResourceVersion)
	}
	names := make([]string, 0, len(v.Nodes))
	for name := range v.Nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		writeNode(&h, v.Nodes[name])
	}
	pools := make([]*karpv1.NodePool, 0, len(v.AllNodePools))
	for _, np := range v.AllNodePools {
		pools = append(pools, np)
	}
	slices.SortFunc(pools, func(a, b *karpv1.NodePool) int { return strings.Compare(a.Name, b.Name) })
	for _, np := range pools {
		h.strings(np.Name, np.ResourceVersion)
	}
	pdbs := slices.Clone(v.PodDisruptionBudgets)
	slices.SortFunc(pdbs, func(a, b *policyv1.PodDisruptionBudget) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	for _, pdb := range pdbs {
		h.strings(pdb.Namespace, pdb.Name, pdb.ResourceVersion)
	}
	var pods uint64
	for _, p := range v.Pods {
		ph := newFNV()
		ph.strings(p.Namespace, p.Name, p.ResourceVersion)
		pods += uint64(ph)
	}
	h.uint64s(pods, uint64(len(v.Pods)), buffers)
	return uint64(h)
}

// fnv64a is a 64-bit FNV-1a hash written to without allocating (hash/fnv takes its input as []byte: converting
// every label, at each Node update of a 5,000-node cluster, allocated gigabytes an hour).
type fnv64a uint64

func newFNV() fnv64a { return 14695981039346656037 }

// strings adds each string and a zero byte after it.
func (h *fnv64a) strings(parts ...string) {
	x := uint64(*h)
	for _, p := range parts {
		for i := 0; i < len(p); i++ {
			x = (x ^ uint64(p[i])) * 1099511628211
		}
		x *= 1099511628211 // a zero byte
	}
	*h = fnv64a(x)
}

// uint64s adds each value's eight bytes, least significant first.
func (h *fnv64a) uint64s(vals ...uint64) {
	x := uint64(*h)
	for _, v := range vals {
		for range 8 {
			x = (x ^ (v & 0xff)) * 1099511628211
			v >>= 8
		}
	}
	*h = fnv64a(x)
}

// writeNode adds what a decision reads of a Node (decisionFields).
func writeNode(h *fnv64a, n *corev1.Node) {
	h.strings("node", n.Name, string(n.UID), n.Spec.ProviderID)
	if n.Spec.Unschedulable {
		h.strings("unschedulable")
	}
	writeMap(h, "l", n.Labels)
	writeMap(h, "a", n.Annotations)
	for _, t := range n.Spec.Taints {
		h.strings("t", t.Key, t.Value, string(t.Effect))
	}
	names := make([]corev1.ResourceName, 0, len(n.Status.Allocatable))
	for name := range n.Status.Allocatable {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		q := n.Status.Allocatable[name]
		h.strings(string(name), q.String())
	}
	for _, c := range n.Status.Conditions {
		h.strings("c", string(c.Type), string(c.Status))
	}
}

func writeMap(h *fnv64a, kind string, m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h.strings(kind)
	for _, k := range keys {
		h.strings(k, m[k])
	}
}

// restUntil is the first time the decision made at now on snap could change with no object changing: a budget's
// schedule turning (cron times are whole minutes), a pod's do-not-disrupt duration ending, a replacement ceasing
// to be fresh (FreshReplacementAge), repairDue (the first repair toleration or hold-back recheck, zero if none);
// at the latest now + RestRecheck.
func restUntil(now time.Time, snap *core.Snapshot, repairDue time.Time) time.Time {
	until := now.Add(RestRecheck)
	earlier := func(t time.Time) {
		if t.After(now) && t.Before(until) {
			until = t
		}
	}
	for _, np := range snap.NodePools {
		for _, b := range np.Spec.Disruption.Budgets {
			if b.Schedule != nil {
				earlier(now.Truncate(time.Minute).Add(time.Minute))
			}
		}
	}
	for _, c := range snap.Candidates {
		if c.Replacement {
			earlier(c.CreatedAt.Add(core.FreshReplacementAge))
		}
		for _, p := range c.Pods {
			if _, ok := p.Annotations[karpv1.DoNotDisruptAnnotationKey]; !ok {
				continue
			}
			if d := termination.PodDoNotDisrupt(p, now); d.Active && !d.Until.IsZero() {
				earlier(d.Until)
			}
		}
	}
	if !repairDue.IsZero() {
		earlier(repairDue)
	}
	return until
}

// atRest says whether the decision res, made on snap with nothing in flight after it, leaves nothing for the
// next pass to find on the same objects: no command, no candidate it did not get to, no repair, and no drifted
// node that stays only because no replacement fits its pods. Whether one fits depends on what no watched object
// shows (the cloud provider's instance types and offerings, a node class becoming ready): a drifted node is
// looked at again every pass, as Karpenter does, rather than RestRecheck later.
func atRest(res *core.Result, snap *core.Snapshot) bool {
	if len(commandsOf(res)) > 0 {
		return false
	}
	drifted := map[string]bool{}
	for _, c := range snap.Candidates {
		if c.Repair != nil {
			return false
		}
		if c.Drifted != "" {
			drifted[c.NodeClaim] = true
		}
	}
	for _, s := range res.Stays {
		if s.Reason == core.StayNotExamined || (s.Reason == core.StayPodsDoNotFit && drifted[s.NodeClaim]) {
			return false
		}
	}
	return true
}
