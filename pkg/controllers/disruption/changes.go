package disruption

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// changeWatch counts, from the informers' notifications, the changes to what restKey fingerprints: NodeClaims,
// pods, NodePools and PodDisruptionBudgets at every new resource version, Nodes only when what a decision reads
// of them changes (not at heartbeats). With no change counted since a decision at rest, a pass need not even list
// the cache: at 5,000 nodes and 50,000 pods listing and fingerprinting every 10 s copied the pod structs and deep
// copied the NodeClaims for nothing.
//
// An informer updates its store before it notifies, so a pass that reads the count and then lists sees every
// change counted; a change stored but not yet counted makes the next pass list again, which finds the rest key
// unchanged.
type changeWatch struct {
	count    atomic.Uint64
	watching atomic.Bool
}

// seen returns the changes counted so far, and whether the count is kept (the informers are watched).
func (w *changeWatch) seen() (uint64, bool) { return w.count.Load(), w.watching.Load() }

// watch adds the counting handlers to the informers of the kinds restKey reads.
func (w *changeWatch) watch(ctx context.Context, informers cache.Informers) error {
	for _, k := range []struct {
		obj      client.Object
		relevant func(old, cur any) bool
	}{
		{&karpv1.NodeClaim{}, newVersion},
		{&corev1.Pod{}, newVersion},
		{&karpv1.NodePool{}, newVersion},
		{&policyv1.PodDisruptionBudget{}, newVersion},
		{&corev1.Node{}, nodeChanged},
	} {
		inf, err := informers.GetInformer(ctx, k.obj)
		if err != nil {
			return fmt.Errorf("getting the %T informer: %w", k.obj, err)
		}
		relevant := k.relevant
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { w.count.Add(1) },
			UpdateFunc: func(old, cur any) {
				if relevant(old, cur) {
					w.count.Add(1)
				}
			},
			DeleteFunc: func(any) { w.count.Add(1) },
		}); err != nil {
			return fmt.Errorf("watching %T changes: %w", k.obj, err)
		}
	}
	w.watching.Store(true)
	return nil
}

// newVersion reports an update to a new resource version (not an informer's resync of the same one).
func newVersion(old, cur any) bool {
	o, ok1 := old.(client.Object)
	n, ok2 := cur.(client.Object)
	return !ok1 || !ok2 || o.GetResourceVersion() != n.GetResourceVersion()
}

// nodeChanged reports an update that changes what restKey reads of a Node.
func nodeChanged(old, cur any) bool {
	o, ok1 := old.(*corev1.Node)
	n, ok2 := cur.(*corev1.Node)
	return !ok1 || !ok2 || nodeKey(o) != nodeKey(n)
}

// nodeKey fingerprints what restKey reads of a Node.
func nodeKey(n *corev1.Node) uint64 {
	h := fnv.New64a()
	writeNode(func(parts ...string) {
		for _, p := range parts {
			_, _ = h.Write([]byte(p))
			_, _ = h.Write([]byte{0})
		}
	}, n)
	return h.Sum64()
}
