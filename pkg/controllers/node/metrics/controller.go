package metrics

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/cache"
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
	// changes counts the changes to pods and to what the series read of Nodes; counted is its value read before
	// the last complete count (valid with have): with nothing changed since, a count would publish the same
	// entries (the lifetime series follow the clock at scrape time) and is skipped.
	changes deps.ChangeCount
	counted uint64
	have    bool
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

// add adds the pod's UID and resource version (FNV-1a, a zero byte between them; written byte by byte: hash/fnv
// takes a []byte, and converting the strings allocated twice per pod at every count).
func (k *podKey) add(p *corev1.Pod) {
	const prime = 1099511628211
	x := uint64(14695981039346656037)
	for _, s := range []string{string(p.UID), p.ResourceVersion} {
		for i := 0; i < len(s); i++ {
			x = (x ^ uint64(s[i])) * prime
		}
		x *= prime
	}
	k.sum += x
	k.count++
}

// NewController returns the controller.
func NewController(d deps.Deps) *Controller { return &Controller{deps: d, sums: map[string]nodeSums{}} }

// Register runs a count at start and every Interval (on the injected clock) while the manager is leader.
func (c *Controller) Register(ctx context.Context, m manager.Manager) error {
	if err := c.Watch(ctx, m.GetCache()); err != nil {
		return err
	}
	return m.Add(deps.Periodic(Name, c.deps.Clock, Interval, "counting the node metrics failed; the next count retries", c.Reconcile))
}

// Watch starts counting the changes a count reads from the informers' notifications (Register does): from then
// on a count with nothing changed since the last one is skipped.
func (c *Controller) Watch(ctx context.Context, informers cache.Informers) error {
	return c.changes.Watch(ctx, informers, deps.Watched{Object: &corev1.Pod{}}, deps.Watched{Object: &corev1.Node{}, Relevant: nodeSeriesChanged})
}

// nodeSeriesChanged reports a Node update that changes its series: labels, allocatable or capacity (not a
// heartbeat).
func nodeSeriesChanged(old, cur any) bool {
	o, ok1 := old.(*corev1.Node)
	n, ok2 := cur.(*corev1.Node)
	return !ok1 || !ok2 || !maps.Equal(o.Labels, n.Labels) || !o.CreationTimestamp.Equal(&n.CreationTimestamp) ||
		!sameQuantities(o.Status.Allocatable, n.Status.Allocatable) || !sameQuantities(o.Status.Capacity, n.Status.Capacity)
}

func sameQuantities(a, b corev1.ResourceList) bool {
	return maps.EqualFunc(a, b, func(x, y resource.Quantity) bool { return x.Cmp(y) == 0 })
}

// Reconcile counts once: one entry a Node with the sums of the requests and limits of its pods that are not
// terminal (DaemonSet pods apart too), and capacity minus allocatable.
func (c *Controller) Reconcile(ctx context.Context) error {
	changes, watching := c.changes.Seen()
	if watching && c.have && changes == c.counted {
		return nil
	}
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
	c.counted, c.have = changes, true
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
