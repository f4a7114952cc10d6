package disruption

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
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

// RestDecisionMaxAge is the longest a decision at rest stands for the passes after it. When RestRecheck passes
// and neither the objects (restKey) nor the decision's other inputs (inputsKey: instance types, offerings,
// prices, DaemonSets, volumes) changed, the decision would find nothing again and is not made; it is made again
// once it is this old, so that the nodes' Unconsolidatable events are repeated about as often as on a busy
// cluster. At 5,000 nodes a decision at rest costs about 2 s of CPU and 2 more collecting what it allocated:
// made every RestRecheck, that was a fifth of the controller's CPU at rest.
const RestDecisionMaxAge = UnconsolidatableRepeat

// restMemo is what the last decision at rest found: nothing to do, on objects whose fingerprint is key, until;
// changes is the Controller.changes count read before those objects were listed, and buffers the CapacityBuffers'
// version in key. inputs fingerprints the decision's other inputs (inputsKey), recheck says until is RestRecheck
// after the pass (nothing time-bound came first), and decided is when the decision was made.
type restMemo struct {
	key              uint64
	until            time.Time
	changes, buffers uint64
	inputs           uint64
	recheck          bool
	decided          time.Time
}

// newRestMemo is the memo of a decision at rest made at now on snap; repairDue is as for restUntil.
func newRestMemo(now time.Time, snap *core.Snapshot, repairDue time.Time, key, inputs, changes, buffers uint64) restMemo {
	until := restUntil(now, snap, repairDue)
	return restMemo{key: key, until: until, changes: changes, buffers: buffers, inputs: inputs,
		recheck: until.Equal(now.Add(RestRecheck)), decided: now}
}

// renewed returns the memo standing for another RestRecheck at now, without a decision, when the pass would
// decide only because RestRecheck passed: the same objects (key), the same other inputs, and a decision younger
// than RestDecisionMaxAge. ok is false when the pass must decide.
func (m restMemo) renewed(now time.Time, snap *core.Snapshot, repairDue time.Time, key, inputs, changes, buffers uint64) (restMemo, bool) {
	if m.key == 0 || m.key != key || !m.recheck || m.inputs != inputs || now.Sub(m.decided) >= RestDecisionMaxAge {
		return restMemo{}, false
	}
	next := newRestMemo(now, snap, repairDue, key, inputs, changes, buffers)
	next.decided = m.decided
	return next, true
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

// inputsKey fingerprints what a decision on snap reads besides restKey's objects, all of which can change with
// no NodeClaim, Node, pod, NodePool or PodDisruptionBudget changing: the instance types each NodePool is offered
// (labels, capacity, overhead, offerings with their prices, availability and reservations), the candidates'
// prices, and the cluster snapshot's DaemonSets, volumes, storage classes, default spread and DRA objects (by
// resource version). Lists are combined in any order: the cache lists objects in no fixed one.
func inputsKey(snap *core.Snapshot) uint64 {
	h := newFNV()
	for _, c := range snap.Candidates {
		h.strings("cand", c.NodeClaim)
		h.uint64s(math.Float64bits(c.Price))
	}
	cl := snap.Cluster
	if cl == nil {
		return uint64(h)
	}
	for _, pool := range slices.Sorted(maps.Keys(cl.InstanceTypes)) {
		h.strings("pool", pool)
		h.uint64s(unordered(cl.InstanceTypes[pool], writeInstanceType))
	}
	object := func(kind string) func(*fnv64a, metav1.Object) {
		return func(h *fnv64a, o metav1.Object) {
			h.strings(kind, o.GetNamespace(), o.GetName(), o.GetResourceVersion())
		}
	}
	h.uint64s(unordered(cl.DaemonSets, func(h *fnv64a, o *appsv1.DaemonSet) { object("ds")(h, o) }),
		unordered(cl.PersistentVolumeClaims, func(h *fnv64a, o *corev1.PersistentVolumeClaim) { object("pvc")(h, o) }),
		unordered(cl.PersistentVolumes, func(h *fnv64a, o *corev1.PersistentVolume) { object("pv")(h, o) }),
		unordered(cl.StorageClasses, func(h *fnv64a, o *storagev1.StorageClass) { object("sc")(h, o) }))
	for _, c := range cl.DefaultSpread {
		h.strings("spread", c.String())
	}
	for _, key := range slices.SortedFunc(maps.Keys(cl.SpreadSelectors), func(a, b types.NamespacedName) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	}) {
		h.strings("sel", key.Namespace, key.Name, metav1.FormatLabelSelector(cl.SpreadSelectors[key]))
	}
	if d := cl.DRA; d != nil {
		h.uint64s(unordered(d.Claims, func(h *fnv64a, o *resourcev1.ResourceClaim) { object("claim")(h, o) }),
			unordered(d.ClaimTemplates, func(h *fnv64a, o *resourcev1.ResourceClaimTemplate) { object("template")(h, o) }),
			unordered(d.DeviceClasses, func(h *fnv64a, o *resourcev1.DeviceClass) { object("class")(h, o) }),
			unordered(d.Slices, func(h *fnv64a, o *resourcev1.ResourceSlice) { object("slice")(h, o) }))
	}
	return uint64(h)
}

// unordered combines the hashes write makes of each element, in any order, with their count.
func unordered[T any](items []T, write func(*fnv64a, T)) uint64 {
	var sum uint64
	for _, it := range items {
		h := newFNV()
		write(&h, it)
		sum += uint64(h)
	}
	h := newFNV()
	h.uint64s(sum, uint64(len(items)))
	return uint64(h)
}

// writeInstanceType adds what a decision reads of an instance type.
func writeInstanceType(h *fnv64a, it *cloudprovider.InstanceType) {
	h.strings("it", it.Name)
	writeMap(h, "l", it.Labels)
	writeResources(h, "cap", it.Capacity)
	writeResources(h, "kr", it.Overhead.KubeReserved)
	writeResources(h, "sr", it.Overhead.SystemReserved)
	writeResources(h, "ev", it.Overhead.EvictionThreshold)
	h.uint64s(unordered(it.Offerings, func(h *fnv64a, o cloudprovider.Offering) {
		h.strings("o", o.Zone, o.CapacityType, o.ReservationID, o.ReservationType, o.PriceOverlay)
		h.uint64s(math.Float64bits(o.Price), math.Float64bits(o.CloudPrice), uint64(o.ReservationCapacity),
			boolBits(o.Available), boolBits(o.Interruptible))
	}))
	h.strings("co")
	for _, name := range slices.Sorted(maps.Keys(it.CapacityOverlays)) {
		h.strings(string(name), it.CapacityOverlays[name])
	}
	h.strings("vl")
	for _, name := range slices.Sorted(maps.Keys(it.VolumeLimits)) {
		h.strings(name)
		h.uint64s(uint64(it.VolumeLimits[name]))
	}
	h.strings("ll")
	for _, key := range slices.Sorted(maps.Keys(it.LaunchLabels)) {
		h.strings(key)
		h.strings(it.LaunchLabels[key]...)
	}
}

func writeResources(h *fnv64a, kind string, l corev1.ResourceList) {
	h.strings(kind)
	for _, name := range slices.Sorted(maps.Keys(l)) {
		q := l[name]
		h.strings(string(name), q.String())
	}
}

func boolBits(b bool) uint64 {
	if b {
		return 1
	}
	return 0
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
	writeResources(h, "alloc", n.Status.Allocatable)
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
