package deps

import (
	"context"
	"fmt"
	"sync/atomic"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ChangeCount counts, from the informers' notifications, the changes to the objects a periodic pass reads, so
// that a pass finding the count as its last run left it can skip the work (listing, summing, fingerprinting)
// whose result would be the same. An informer updates its store before it notifies: a pass that reads the count
// and then lists sees every change counted, and a change stored but not yet counted only makes the next pass run.
// The zero value counts nothing until Watch.
type ChangeCount struct {
	count    atomic.Uint64
	watching atomic.Bool
}

// Watched is a kind whose changes a ChangeCount counts: every add and delete, and the updates Relevant reports
// (NewVersion when nil).
type Watched struct {
	Object   client.Object
	Relevant func(old, cur any) bool
}

// Seen returns the changes counted so far, and whether they are counted (Watch succeeded).
func (w *ChangeCount) Seen() (uint64, bool) { return w.count.Load(), w.watching.Load() }

// Watch adds the counting handlers to the informers of the kinds.
func (w *ChangeCount) Watch(ctx context.Context, informers cache.Informers, kinds ...Watched) error {
	for _, k := range kinds {
		inf, err := informers.GetInformer(ctx, k.Object)
		if err != nil {
			return fmt.Errorf("getting the %T informer: %w", k.Object, err)
		}
		relevant := k.Relevant
		if relevant == nil {
			relevant = NewVersion
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { w.count.Add(1) },
			UpdateFunc: func(old, cur any) {
				if relevant(old, cur) {
					w.count.Add(1)
				}
			},
			DeleteFunc: func(any) { w.count.Add(1) },
		}); err != nil {
			return fmt.Errorf("watching %T changes: %w", k.Object, err)
		}
	}
	w.watching.Store(true)
	return nil
}

// NewVersion reports an update to a new resource version (not an informer's resync of the same one).
func NewVersion(old, cur any) bool {
	o, ok1 := old.(client.Object)
	n, ok2 := cur.(client.Object)
	return !ok1 || !ok2 || o.GetResourceVersion() != n.GetResourceVersion()
}
