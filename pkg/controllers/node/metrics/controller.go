package metrics

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/operator/index"
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
	// entries are the last count's entries by Node name, valid with have.
	entries map[string]metrics.NodeEntry
	have    bool
	// dirty holds the Nodes whose entries changed since the last count, from the informers' notifications
	// (Watch): a count then reads only those Nodes and their pods (the spec.nodeName index) instead of walking
	// every pod of the cluster (1.9 CPU s a minute at 50,000 pods while consolidation moved pods).
	dirty dirtyNodes
}

// dirtyNodes is the set of Node names whose series may have changed. Informers store an object before they
// notify: a count that takes the set and then reads the cache sees every change marked before, and a change
// stored but not yet marked only makes the next count read that Node again.
type dirtyNodes struct {
	mu       sync.Mutex
	names    map[string]struct{}
	all      bool // a notification that named no Node: the next count reads everything
	watching bool
}

func (d *dirtyNodes) mark(names ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.names == nil {
		d.names = map[string]struct{}{}
	}
	for _, n := range names {
		if n != "" {
			d.names[n] = struct{}{}
		}
	}
}

func (d *dirtyNodes) markAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.all = true
}

// take empties the set and returns what it held, and whether the informers are watched (without that, every
// count reads everything).
func (d *dirtyNodes) take() (names map[string]struct{}, all, watching bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	names, all, watching = d.names, d.all, d.watching
	d.names, d.all = nil, false
	return names, all, watching
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
func NewController(d deps.Deps) *Controller {
	return &Controller{deps: d, sums: map[string]nodeSums{}, entries: map[string]metrics.NodeEntry{}}
}

// Register runs a count at start and every Interval (on the injected clock) while the manager is leader.
func (c *Controller) Register(ctx context.Context, m manager.Manager) error {
	if err := c.Watch(ctx, m.GetCache()); err != nil {
		return err
	}
	return m.Add(deps.Periodic(Name, c.deps.Clock, Interval, "counting the node metrics failed; the next count retries", c.Reconcile))
}

// Watch marks, from the informers' notifications, the Nodes whose series a pod or Node change may have changed
// (Register does): from then on a count reads only those Nodes and their pods, and is skipped when there are none.
// Counts read the pods of a Node through the spec.nodeName index (index.PodNodeName).
func (c *Controller) Watch(ctx context.Context, informers cache.Informers) error {
	pods, err := informers.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("getting the pod informer: %w", err)
	}
	nodes, err := informers.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return fmt.Errorf("getting the node informer: %w", err)
	}
	if _, err := pods.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: c.podChanged,
		UpdateFunc: func(old, cur any) {
			if deps.NewVersion(old, cur) {
				c.podChanged(old)
				c.podChanged(cur)
			}
		},
		DeleteFunc: c.podChanged,
	}); err != nil {
		return fmt.Errorf("watching pod changes: %w", err)
	}
	if _, err := nodes.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: c.nodeChanged,
		UpdateFunc: func(old, cur any) {
			if nodeSeriesChanged(old, cur) {
				c.nodeChanged(cur)
			}
		},
		DeleteFunc: c.nodeChanged,
	}); err != nil {
		return fmt.Errorf("watching node changes: %w", err)
	}
	c.dirty.mu.Lock()
	c.dirty.watching = true
	c.dirty.mu.Unlock()
	return nil
}

// podChanged marks the Node of a pod notified (added, updated, deleted; a deletion may come as a tombstone).
func (c *Controller) podChanged(o any) {
	if p, ok := notified[*corev1.Pod](o); ok {
		c.dirty.mark(p.Spec.NodeName)
		return
	}
	c.dirty.markAll()
}

// nodeChanged marks a Node notified.
func (c *Controller) nodeChanged(o any) {
	if n, ok := notified[*corev1.Node](o); ok {
		c.dirty.mark(n.Name)
		return
	}
	c.dirty.markAll()
}

// notified returns the object of an informer notification, unwrapped from a deletion's tombstone, when it is a T.
func notified[T any](o any) (T, bool) {
	if t, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	v, ok := o.(T)
	return v, ok
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
// terminal (DaemonSet pods apart too), and capacity minus allocatable. Once a whole count is done and the
// informers are watched, it recounts only the Nodes marked since (none: nothing is published again; the
// lifetime series follow the clock at scrape time).
func (c *Controller) Reconcile(ctx context.Context) error {
	names, all, watching := c.dirty.take()
	if watching && c.have && !all {
		if len(names) == 0 {
			return nil
		}
		if err := c.recount(ctx, names); err != nil {
			c.dirty.markAll() // what was taken is not lost: the next count reads everything
			return err
		}
		c.publish()
		return nil
	}
	if err := c.countAll(ctx); err != nil {
		if watching {
			c.dirty.markAll()
		}
		return err
	}
	c.publish()
	return nil
}

// publish replaces the node series with the entries.
func (c *Controller) publish() {
	entries := make([]metrics.NodeEntry, 0, len(c.entries))
	for _, e := range c.entries {
		entries = append(entries, e)
	}
	c.deps.Metrics.Nodes.Replace(entries)
	// The entries come from the informer caches, which answer only once synced.
	c.deps.Metrics.ClusterStateSynced.Set(1)
	c.deps.Metrics.ClusterStateUnsyncedTime.Set(0)
	c.have = true
}

// recount reads the named Nodes and their pods again.
func (c *Controller) recount(ctx context.Context, names map[string]struct{}) error {
	for name := range names {
		n := &corev1.Node{}
		if err := c.deps.Client.Get(ctx, client.ObjectKey{Name: name}, n, client.UnsafeDisableDeepCopy); err != nil {
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("getting node %s: %w", name, err)
			}
			delete(c.entries, name)
			delete(c.sums, name)
			continue
		}
		pods := &corev1.PodList{}
		if err := c.deps.Client.List(ctx, pods, client.MatchingFields{index.PodNodeName: name}, client.UnsafeDisableDeepCopy); err != nil {
			return fmt.Errorf("listing the pods of node %s: %w", name, err)
		}
		var bound []*corev1.Pod
		var key podKey
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName != name || termination.IsTerminal(p) {
				continue
			}
			bound = append(bound, p)
			key.add(p)
		}
		if len(bound) == 0 {
			delete(c.sums, name)
		} else {
			c.sums[name] = sumPods(key, bound)
		}
		c.entries[name] = c.entry(n)
	}
	return nil
}

// countAll counts every Node and pod.
func (c *Controller) countAll(ctx context.Context) error {
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
		byNode[name] = sumPods(keys[name], pods)
	}
	c.sums = byNode
	entries := make(map[string]metrics.NodeEntry, len(nodes.Items))
	for i := range nodes.Items {
		n := &nodes.Items[i]
		entries[n.Name] = c.entry(n)
	}
	c.entries = entries
	return nil
}

// sumPods adds up the requests and limits of a Node's pods (those not terminal).
func sumPods(key podKey, pods []*corev1.Pod) nodeSums {
	s := nodeSums{pods: key, requests: corev1.ResourceList{}, limits: corev1.ResourceList{},
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
	return s
}

// entry is the Node's entry with the sums of its pods.
func (c *Controller) entry(n *corev1.Node) metrics.NodeEntry {
	e := metrics.NodeEntry{Labels: metrics.NodeLabelValues(n), Created: n.CreationTimestamp.Time,
		Allocatable: values(n.Status.Allocatable), Overhead: values(overhead(n))}
	if s, ok := c.sums[n.Name]; ok {
		e.PodRequests, e.PodLimits = values(s.requests), values(s.limits)
		e.DaemonRequests, e.DaemonLimits = values(s.daemonRequests), values(s.daemonLimits)
	}
	return e
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
