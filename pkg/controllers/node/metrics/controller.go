package metrics

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/termination"
)

// Name is the controller's name in logs and metrics.
const Name = "metrics.node"

// Interval is the time between two counts, as in Karpenter.
const Interval = 5 * time.Second

// Controller counts the node series.
type Controller struct {
	deps deps.Deps
	// sums are the last count's sums by Node, with the fingerprint of the pods they were summed from: a Node whose
	// pods are as they were keeps its sums without their requests being added up again (at 10,000 pods the sums
	// were most of an idle controller's CPU).
	sums map[string]nodeSums
}

// nodeSums are the sums of the requests and limits of a Node's pods that are not terminal, and of its
// DaemonSet pods apart; pods fingerprints the pods they come from (podKey).
type nodeSums struct {
	pods                                           podKey
	requests, limits, daemonRequests, daemonLimits corev1.ResourceList
}

// podKey fingerprints a set of pods by their UIDs and resource versions, in any order.
type podKey struct {
	sum   uint64
	count int
}

func (k *podKey) add(p *corev1.Pod) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(p.UID))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(p.ResourceVersion))
	k.sum += h.Sum64()
	k.count++
}

// NewController returns the controller.
func NewController(d deps.Deps) *Controller { return &Controller{deps: d, sums: map[string]nodeSums{}} }

// Register runs a count at start and every Interval (on the injected clock) while the manager is leader.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	return m.Add(deps.Periodic(Name, c.deps.Clock, Interval, "counting the node metrics failed; the next count retries", c.Reconcile))
}

// Reconcile counts once: one entry a Node with the sums of the requests and limits of its pods that are not
// terminal (DaemonSet pods apart too), and capacity minus allocatable.
func (c *Controller) Reconcile(ctx context.Context) error {
	nodes := &corev1.NodeList{}
	if err := c.deps.Client.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	// The pods are walked in the cache, not listed: a list copies every Pod struct on every count. The walk only
	// fingerprints each Node's pods; their requests are added up for the Nodes whose pods changed.
	podsOf := map[string][]*corev1.Pod{}
	keys := map[string]podKey{}
	if err := c.deps.EachCachedPod(ctx, func(p *corev1.Pod) {
		if p.Spec.NodeName == "" || termination.IsTerminal(p) {
			return
		}
		podsOf[p.Spec.NodeName] = append(podsOf[p.Spec.NodeName], p)
		k := keys[p.Spec.NodeName]
		k.add(p)
		keys[p.Spec.NodeName] = k
	}); err != nil {
		return err
	}
	byNode := make(map[string]nodeSums, len(podsOf))
	for name, pods := range podsOf {
		if last, ok := c.sums[name]; ok && last.pods == keys[name] {
			byNode[name] = last
			continue
		}
		s := nodeSums{pods: keys[name], requests: corev1.ResourceList{}, limits: corev1.ResourceList{},
			daemonRequests: corev1.ResourceList{}, daemonLimits: corev1.ResourceList{}}
		for _, p := range pods {
			req, lim := scheduling.PodRequests(p), PodLimits(p)
			add(s.requests, req)
			add(s.limits, lim)
			if termination.IsDaemonSetPod(p) {
				add(s.daemonRequests, req)
				add(s.daemonLimits, lim)
			}
		}
		byNode[name] = s
	}
	c.sums = byNode
	entries := make([]metrics.NodeEntry, 0, len(nodes.Items))
	for i := range nodes.Items {
		n := &nodes.Items[i]
		e := metrics.NodeEntry{Labels: metrics.NodeLabelValues(n), Created: n.CreationTimestamp.Time,
			Allocatable: values(n.Status.Allocatable), Overhead: values(overhead(n))}
		if s, ok := byNode[n.Name]; ok {
			e.PodRequests, e.PodLimits = values(s.requests), values(s.limits)
			e.DaemonRequests, e.DaemonLimits = values(s.daemonRequests), values(s.daemonLimits)
		}
		entries = append(entries, e)
	}
	c.deps.Metrics.Nodes.Replace(entries)
	// The lists above come from the informer caches, which answer only once synced.
	c.deps.Metrics.ClusterStateSynced.Set(1)
	c.deps.Metrics.ClusterStateUnsyncedTime.Set(0)
	return nil
}

// PodLimits sums the limits of the pod's containers and restartable init containers, plus its overhead.
func PodLimits(p *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := range p.Spec.Containers {
		add(out, p.Spec.Containers[i].Resources.Limits)
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(out, c.Resources.Limits)
		}
	}
	add(out, p.Spec.Overhead)
	return out
}

func overhead(n *corev1.Node) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, capacity := range n.Status.Capacity {
		if a, ok := n.Status.Allocatable[name]; ok {
			capacity.Sub(a)
		}
		out[name] = capacity
	}
	return out
}

func add(into, l corev1.ResourceList) {
	for name, q := range l {
		sum := into[name]
		sum.Add(q)
		into[name] = sum
	}
}

func values(l corev1.ResourceList) []metrics.ResourceValue {
	if len(l) == 0 {
		return nil
	}
	out := make([]metrics.ResourceValue, 0, len(l))
	for name, q := range l {
		out = append(out, metrics.ResourceValue{Name: string(name), Value: q.AsApproximateFloat64()})
	}
	return out
}
