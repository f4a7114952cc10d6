package test

import (
	"context"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dovetail/dovetail/pkg/controllers/deps"
)

// ConflictOnce returns interceptor functions that answer the first n writes (Update, Patch, and their status
// subresource forms) with an optimistic-concurrency conflict, as the API server does when the object changed
// since it was read; later writes go through. Conflicts reports how many were injected.
type ConflictOnce struct {
	n         int32
	conflicts atomic.Int32
}

// NewConflictOnce injects n conflicts.
func NewConflictOnce(n int) *ConflictOnce { return &ConflictOnce{n: int32(n)} }

// Conflicts is how many conflicts were injected so far.
func (c *ConflictOnce) Conflicts() int { return int(c.conflicts.Load()) }

func (c *ConflictOnce) inject(obj client.Object) error {
	if c.conflicts.Add(1) <= c.n {
		return apierrors.NewConflict(schema.GroupResource{Resource: "objects"}, obj.GetName(),
			errTestConflict)
	}
	c.conflicts.Add(-1)
	return nil
}

type conflictError string

func (e conflictError) Error() string { return string(e) }

const errTestConflict = conflictError("the object has been modified; please apply your changes to the latest version and try again")

// Funcs are the interceptor functions to give fake.ClientBuilder.WithInterceptorFuncs.
func (c *ConflictOnce) Funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := c.inject(obj); err != nil {
				return err
			}
			return cl.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := c.inject(obj); err != nil {
				return err
			}
			return cl.Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := c.inject(obj); err != nil {
				return err
			}
			return cl.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := c.inject(obj); err != nil {
				return err
			}
			return cl.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
}

// ReconcileThroughConflict runs r, wrapped as the operator registers it (deps.RetryTransient), twice with req:
// the first run must hit the conflict c injects and be requeued without an error (by the controller itself or
// by the wrapper, so controller-runtime logs nothing), the second must succeed.
func ReconcileThroughConflict(t testing.TB, r reconcile.Reconciler, req reconcile.Request, c *ConflictOnce) {
	t.Helper()
	wrapped := deps.RetryTransient(r)
	res, err := wrapped.Reconcile(context.Background(), req)
	if err != nil {
		t.Fatalf("first Reconcile returned %v; a conflict must be retried, not returned", err)
	}
	if c.Conflicts() != 1 {
		t.Fatalf("first Reconcile made %d conflicting writes, want 1 (did it write at all?)", c.Conflicts())
	}
	if res.IsZero() {
		t.Fatalf("first Reconcile hit a conflict but was not requeued")
	}
	if _, err := wrapped.Reconcile(context.Background(), req); err != nil {
		t.Fatalf("second Reconcile: %v", err)
	}
}
