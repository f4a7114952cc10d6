package test

import (
	"context"
	"errors"
	"sync"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// StatusWrites counts the status writes made through a StaleNodeClaims client and those the API server refused.
type StatusWrites struct {
	mu              sync.Mutex
	writes, refused int
}

// Counts returns the writes and refusals so far.
func (w *StatusWrites) Counts() (writes, refused int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes, w.refused
}

// Reset sets both counts to zero.
func (w *StatusWrites) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes, w.refused = 0, 0
}

// StaleNodeClaims wraps c (a manager's client) so that, whenever stale returns a NodeClaim, every NodeClaim read
// answers with a copy of it, as a cache behind the API server would; the status writes are counted.
func StaleNodeClaims(c client.Client, stale func() *karpv1.NodeClaim) (client.Client, *StatusWrites) {
	w := &StatusWrites{}
	return interceptor.NewClient(noWatch{c}, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if nc, ok := obj.(*karpv1.NodeClaim); ok {
				if s := stale(); s != nil {
					s.DeepCopyInto(nc)
					return nil
				}
			}
			return c.Get(ctx, key, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			err := c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			w.mu.Lock()
			defer w.mu.Unlock()
			w.writes++
			if err != nil {
				w.refused++
			}
			return err
		},
	}), w
}

// noWatch lets a client without Watch be wrapped by an interceptor, which wants a client.WithWatch.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch not supported")
}

// FrozenNodeClaimList wraps c so that every NodeClaim list answers the NodeClaims as c lists them now, as a cache
// that never sees the writes made after would; everything else goes to c.
func FrozenNodeClaimList(ctx context.Context, c client.Client) (client.Client, error) {
	frozen := &karpv1.NodeClaimList{}
	if err := c.List(ctx, frozen); err != nil {
		return nil, err
	}
	return interceptor.NewClient(noWatch{c}, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if l, ok := list.(*karpv1.NodeClaimList); ok {
				frozen.DeepCopyInto(l)
				return nil
			}
			return c.List(ctx, list, opts...)
		},
	}), nil
}
