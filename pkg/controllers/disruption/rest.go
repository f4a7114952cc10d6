package disruption

import (
	"encoding/binary"
	"hash/fnv"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

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
// changes is the changeWatch count read before those objects were listed, and buffers the CapacityBuffers'
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
	h := fnv.New64a()
	write := func(parts ...string) {
		for _, p := range parts {
			_, _ = h.Write([]byte(p))
			_, _ = h.Write([]byte{0})
		}
	}
	for i := range v.Claims {
		write("nc", v.Claims[i].Name, v.Claims[i].ResourceVersion)
	}
	names := make([]string, 0, len(v.Nodes))
	for name := range v.Nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		writeNode(write, v.Nodes[name])
	}
	pools := make([]string, 0, len(v.AllNodePools))
	for _, np := range v.AllNodePools {
		pools = append(pools, np.Name+"\x00"+np.ResourceVersion)
	}
	slices.Sort(pools)
	write(pools...)
	pdbs := make([]string, 0, len(v.PodDisruptionBudgets))
	for _, pdb := range v.PodDisruptionBudgets {
		pdbs = append(pdbs, pdb.Namespace+"/"+pdb.Name+"\x00"+pdb.ResourceVersion)
	}
	slices.Sort(pdbs)
	write(pdbs...)
	var pods uint64
	ph := fnv.New64a()
	for _, p := range v.Pods {
		ph.Reset()
		for _, s := range []string{p.Namespace, p.Name, p.ResourceVersion} {
			_, _ = ph.Write([]byte(s))
			_, _ = ph.Write([]byte{0})
		}
		pods += ph.Sum64()
	}
	var b [24]byte
	binary.LittleEndian.PutUint64(b[:8], pods)
	binary.LittleEndian.PutUint64(b[8:16], uint64(len(v.Pods)))
	binary.LittleEndian.PutUint64(b[16:], buffers)
	_, _ = h.Write(b[:])
	return h.Sum64()
}

func writeNode(write func(...string), n *corev1.Node) {
	write("node", n.Name, string(n.UID), n.Spec.ProviderID)
	if n.Spec.Unschedulable {
		write("unschedulable")
	}
	writeMap(write, "l", n.Labels)
	writeMap(write, "a", n.Annotations)
	for _, t := range n.Spec.Taints {
		write("t", t.Key, t.Value, string(t.Effect))
	}
	res := make([]string, 0, len(n.Status.Allocatable))
	for name, q := range n.Status.Allocatable {
		res = append(res, string(name)+"="+q.String())
	}
	slices.Sort(res)
	write(res...)
	for _, c := range n.Status.Conditions {
		write("c", string(c.Type), string(c.Status))
	}
}

func writeMap(write func(...string), kind string, m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	write(kind)
	for _, k := range keys {
		write(k, m[k])
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
