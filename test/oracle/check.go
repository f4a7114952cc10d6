package oracle

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumebinding"

	"github.com/dovetail/dovetail/pkg/scheduling"
)

// informerTimeout bounds the wait for the volume binder's caches to hold the cluster's claims and volumes.
const informerTimeout = 30 * time.Second

// Options select optional checks.
type Options struct {
	// EveryOption also checks each planned NodeClaim as every other Node it may launch as (each instance-type
	// option in each available offering its requirements allow), one claim at a time with the others at their
	// cheapest option.
	EveryOption bool
	// Order also looks for an order in which the kube-scheduler could bind the planned pods one at a time, each on
	// its planned node passing PreFilter and Filter given the existing pods and the planned pods bound before it
	// (see replay). Pods left over when no order is found are violations.
	Order bool
	// Selectors are the Services, ReplicaSets, StatefulSets and ReplicationControllers the PodTopologySpread plugin
	// deduces the selectors of the snapshot's default constraints (Snapshot.DefaultSpread) from, on its own. With
	// DefaultSpread set, the plugin runs with those constraints (defaultingType List), as a kube-scheduler given the
	// same SCHEDULER_CONFIG does; without, with no default constraints.
	Selectors scheduling.SelectorSources
}

// Check materializes the cluster plan produces from snap and runs the upstream filters for every placed pod
// against its node, with every other pod of the cluster in place: the pod is taken off its node, PreFilter of each
// plugin runs over the whole cluster, then Filter on the pod's node. That is what the kube-scheduler decides when
// this pod is the last one it schedules. It returns the violations sorted (none for a correct plan); the error is
// for a checker that could not run.
func Check(ctx context.Context, snap *scheduling.Snapshot, plan *scheduling.Plan, opts Options) ([]Violation, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, l, plugins, err := setup(ctx, snap, plan, opts.Selectors)
	if err != nil {
		return nil, err
	}
	out := c.out
	check := func(p *corev1.Pod, pods []*corev1.Pod, where string) {
		without := l.without(p, pods)
		for _, st := range run(ctx, plugins, p, without, l.list) {
			out = append(out, Violation{Pod: p.Namespace + "/" + p.Name, Node: where, Plugin: st.Plugin(), Message: st.Message()})
		}
		l.restore(p.Spec.NodeName)
	}
	for _, p := range c.planned {
		check(p, c.pods[p.Spec.NodeName], p.Spec.NodeName)
	}
	if opts.EveryOption {
		for _, cl := range c.claims {
			for _, v := range c.variants(snap, cl) {
				pods := append(c.daemonPods(v), cl.planned...)
				old := l.replace(v, pods)
				where := fmt.Sprintf("%s as %s %s %s", v.Name, v.Labels[corev1.LabelInstanceTypeStable], v.Labels[corev1.LabelTopologyZone], v.Labels[labelCapacityType])
				for _, p := range cl.planned {
					check(p, pods, where)
				}
				l.put(old)
			}
		}
	}
	if opts.Order {
		out = append(out, replay(ctx, c, l, plugins)...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// setup materializes the cluster and builds the plugins on it; cancel ctx to stop their informers.
func setup(ctx context.Context, snap *scheduling.Snapshot, plan *scheduling.Plan, sel scheduling.SelectorSources) (*cluster, *lister, []plugin, error) {
	c := materialize(snap, plan)
	if len(snap.DefaultSpread) > 0 {
		c.selectors(sel)
	}
	l := newLister(c)
	plugins, err := newPlugins(ctx, c, l, snap.DefaultSpread)
	if err != nil {
		return nil, nil, nil, err
	}
	if c.hasVolumes {
		if err := waitForVolumeCaches(ctx, c, plugins); err != nil {
			return nil, nil, nil, err
		}
	}
	return c, l, plugins, nil
}

// Placeable returns the pods plan reports unschedulable that the kube-scheduler would bind on a node of the cluster
// the plan produces (every filter passes there with all planned pods in place), one entry per pod naming the first
// such node. They are not placement violations: the plan's reason for them is wrong, or placing them would break
// another pod's constraints, which the kube-scheduler does not look at.
func Placeable(ctx context.Context, snap *scheduling.Snapshot, plan *scheduling.Plan) ([]Violation, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, l, plugins, err := setup(ctx, snap, plan, scheduling.SelectorSources{})
	if err != nil {
		return nil, err
	}
	pending := map[types.NamespacedName]*corev1.Pod{}
	for _, p := range snap.Pods {
		pending[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}
	var out []Violation
	for _, u := range plan.Unschedulable {
		p := pending[u.Pod]
		if p == nil {
			continue
		}
		for _, n := range c.nodes {
			if len(run(ctx, plugins, p, l.full[n.Name], l.list)) == 0 {
				out = append(out, Violation{Pod: u.Pod.String(), Node: n.Name, Plugin: "Unschedulable",
					Message: "the kube-scheduler would bind it here; the plan says: " + u.Reason})
				break
			}
		}
	}
	return out, nil
}

// replay looks for an order in which the kube-scheduler could bind every planned pod on its planned node, each
// passing the filters given the existing pods and the planned pods bound before it. Finding one is a search; replay
// tries three greedy constructions, any of which proves an order exists:
//   - forward: bind, in passes over the pods in name order, every pod that passes given the pods bound so far;
//   - forward, unconstrained pods last: bind the pods with topology spread or required pod (anti-)affinity in
//     passes and, when none binds, one pod without such constraints, then try the constrained ones again;
//   - backward: from the final state, take off, in passes, every pod that passes given all the pods still there
//     (it could be the last one bound); the reverse of the order taken off is a binding order.
//
// When all three get stuck it returns a violation for each pod the first construction could not bind, with the
// statuses of its last attempt. It leaves l holding every pod again.
func replay(ctx context.Context, c *cluster, l *lister, plugins []plugin) []Violation {
	planned := map[*corev1.Pod]bool{}
	var constrained, free []*corev1.Pod
	for _, p := range c.planned {
		planned[p] = true
		if hasConstraints(p) {
			constrained = append(constrained, p)
		} else {
			free = append(free, p)
		}
	}
	// cur holds each node's pods in the state being built; reset keeps the pods keep selects
	cur := map[string][]*corev1.Pod{}
	reset := func(keep func(p *corev1.Pod) bool) {
		for _, n := range c.nodes {
			var pods []*corev1.Pod
			for _, p := range c.pods[n.Name] {
				if keep(p) {
					pods = append(pods, p)
				}
			}
			cur[n.Name] = pods
			l.replace(n, pods)
		}
	}
	defer reset(func(*corev1.Pod) bool { return true })
	existing := func(p *corev1.Pod) bool { return !planned[p] }
	bind := func(p *corev1.Pod) []*fwk.Status {
		ni := l.full[p.Spec.NodeName]
		st := run(ctx, plugins, p, ni, l.list)
		if len(st) == 0 {
			ni.AddPod(p)
		}
		return st
	}
	takeOff := func(p *corev1.Pod) []*fwk.Status {
		name := p.Spec.NodeName
		st := run(ctx, plugins, p, l.without(p, cur[name]), l.list)
		l.restore(name)
		if len(st) == 0 {
			cur[name] = slices.DeleteFunc(slices.Clone(cur[name]), func(q *corev1.Pod) bool { return q == p })
			l.replace(l.full[name].Node(), cur[name])
		}
		return st
	}

	// forward
	reset(existing)
	forward := passes(c.planned, bind)
	if len(forward) == 0 {
		return nil
	}
	// forward, unconstrained pods last
	reset(existing)
	for {
		left := passes(constrained, bind)
		if len(left) == 0 {
			return nil
		}
		constrained = slices.DeleteFunc(constrained, func(p *corev1.Pod) bool { _, stuck := left[p]; return !stuck })
		if len(free) == 0 || len(bind(free[0])) > 0 {
			break
		}
		free = free[1:]
	}
	// backward
	reset(func(*corev1.Pod) bool { return true })
	if len(passes(c.planned, takeOff)) == 0 {
		return nil
	}
	var out []Violation
	for _, p := range c.planned {
		for _, st := range forward[p] {
			out = append(out, Violation{Pod: p.Namespace + "/" + p.Name, Node: p.Spec.NodeName, Plugin: st.Plugin(),
				Message: "no binding order found: " + st.Message()})
		}
	}
	return out
}

// hasConstraints tells whether p has topology spread constraints or required pod affinity or anti-affinity.
func hasConstraints(p *corev1.Pod) bool {
	if len(p.Spec.TopologySpreadConstraints) > 0 {
		return true
	}
	a := p.Spec.Affinity
	return a != nil && (a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 ||
		a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0)
}

// passes calls try on each pod in order, again and again over the pods it failed, until a pass moves no pod. It
// returns the pods that never succeeded with the statuses of their last try.
func passes(pods []*corev1.Pod, try func(p *corev1.Pod) []*fwk.Status) map[*corev1.Pod][]*fwk.Status {
	left := pods
	last := map[*corev1.Pod][]*fwk.Status{}
	for progress := true; progress && len(left) > 0; {
		progress = false
		var next []*corev1.Pod
		for _, p := range left {
			if st := try(p); len(st) > 0 {
				last[p] = st
				next = append(next, p)
				continue
			}
			delete(last, p)
			progress = true
		}
		left = next
	}
	return last
}

// run is one scheduling cycle of pod restricted to node ni: PreFilter of every plugin (a Skip skips its Filter, a
// PreFilterResult that leaves the node out fails), then Filter of every plugin that did not skip or fail. It returns
// every non-success status, each naming its plugin.
func run(ctx context.Context, plugins []plugin, pod *corev1.Pod, ni *framework.NodeInfo, nodes []fwk.NodeInfo) []*fwk.Status {
	state := framework.NewCycleState()
	var out []*fwk.Status
	skip := map[string]bool{}
	for _, pl := range plugins {
		if pl.preFilter == nil {
			continue
		}
		res, st := pl.preFilter.PreFilter(ctx, state, pod, nodes)
		switch {
		case st.IsSkip():
			skip[pl.name] = true
		case !st.IsSuccess():
			skip[pl.name] = true
			out = append(out, st.WithPlugin(pl.name))
		case !res.AllNodes() && !res.NodeNames.Has(ni.Node().Name):
			out = append(out, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "PreFilter leaves the node out").WithPlugin(pl.name))
		}
	}
	for _, pl := range plugins {
		if skip[pl.name] {
			continue
		}
		if st := pl.filter.Filter(ctx, state, pod, ni); !st.IsSuccess() {
			out = append(out, st.WithPlugin(pl.name))
		}
	}
	return out
}

// waitForVolumeCaches polls until the volume binder's caches, fed by informer events, hold every claim and volume:
// for each claim a probe pod mounting it must pass PreFilter without error and, on a node without labels, must not
// be refused for a claim bound to a missing volume.
func waitForVolumeCaches(ctx context.Context, c *cluster, plugins []plugin) error {
	var vb plugin
	for _, pl := range plugins {
		if pl.name == volumebinding.Name {
			vb = pl
		}
	}
	var probes []*corev1.Pod
	for _, o := range c.objects {
		if pvc, ok := o.(*corev1.PersistentVolumeClaim); ok {
			probes = append(probes, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pvc.Namespace, Name: "oracle-probe", UID: "oracle-probe"},
				Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}}}})
		}
	}
	bare := framework.NewNodeInfo()
	bare.SetNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "oracle-probe-node"}})
	ready := func(ctx context.Context) (bool, error) {
		for _, p := range probes {
			state := framework.NewCycleState()
			_, st := vb.preFilter.PreFilter(ctx, state, p, nil)
			if st.Code() == fwk.Error {
				return false, nil
			}
			if !st.IsSuccess() {
				continue
			}
			// a nil status is a pass (an unbound WaitForFirstConsumer claim)
			if st := vb.filter.Filter(ctx, state, p, bare); st != nil && slices.Contains(st.Reasons(), string(volumebinding.ErrReasonPVNotExist)) {
				return false, nil
			}
		}
		return true, nil
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, informerTimeout, true, ready); err != nil {
		return fmt.Errorf("volume binder caches did not fill: %w", err)
	}
	return nil
}
