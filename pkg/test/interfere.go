package test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dovetail/dovetail/pkg/controllers/deps"
)

// InterferedAnnotation is the annotation an Interferer's concurrent update sets.
const InterferedAnnotation = "test.dovetail.sh/interfered"

// Interferer updates an object behind the controller's back right before the controller writes it: the first
// write (Update, Patch or their status forms) to an object Match accepts is preceded by an Update of the same
// object through Raw, which sets InterferedAnnotation. The controller's copy is then stale, as when a kubelet, a
// user or another controller wrote in between its read and its write: a write with an optimistic lock conflicts,
// a lockless patch lands. The test then checks the controller's write still lands (at once or on a requeue,
// without an error) and did not undo the concurrent update.
type Interferer struct {
	// Raw writes the concurrent update; it must bypass the interceptor (the API server's client).
	Raw client.Client
	// Match selects the writes to interfere with (nil: every write).
	Match func(client.Object) bool
	// Reader, when set, is what the controller reads through (a manager's cache): ReconcileUntil waits until it
	// shows the concurrent update before running the next pass, as controller-runtime's requeue would.
	Reader client.Reader

	mu     sync.Mutex
	done   bool
	target client.ObjectKey
	kind   string
	object client.Object
}

// Interfered reports whether the concurrent update happened, and to which object.
func (i *Interferer) Interfered() (bool, string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.done, fmt.Sprintf("%s %s", i.kind, i.target)
}

func (i *Interferer) before(ctx context.Context, obj client.Object) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.done || (i.Match != nil && !i.Match(obj)) {
		return nil
	}
	fresh, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("interferer: %T is not a client.Object", obj)
	}
	if err := i.Raw.Get(ctx, client.ObjectKeyFromObject(obj), fresh); err != nil {
		return fmt.Errorf("interferer: reading %s: %w", obj.GetName(), err)
	}
	a := fresh.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[InterferedAnnotation] = "true"
	fresh.SetAnnotations(a)
	if err := i.Raw.Update(ctx, fresh); err != nil {
		return fmt.Errorf("interferer: updating %s: %w", obj.GetName(), err)
	}
	i.done, i.target, i.kind, i.object = true, client.ObjectKeyFromObject(obj), fmt.Sprintf("%T", obj), fresh.DeepCopyObject().(client.Object)
	return nil
}

// waitSeen waits until Reader shows the concurrent update (or the object is gone).
func (i *Interferer) waitSeen(t testing.TB) {
	t.Helper()
	i.mu.Lock()
	done, key, obj := i.done, i.target, i.object
	i.mu.Unlock()
	if !done || i.Reader == nil {
		return
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		got := obj.DeepCopyObject().(client.Object)
		err := i.Reader.Get(context.Background(), key, got)
		if apierrors.IsNotFound(err) || (err == nil && got.GetAnnotations()[InterferedAnnotation] == "true") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the controller's reader never showed the concurrent update of %s: %v", key, err)
		}
	}
}

// Funcs are the interceptor functions (see Client).
func (i *Interferer) Funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if err := i.before(ctx, obj); err != nil {
				return err
			}
			return cl.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := i.before(ctx, obj); err != nil {
				return err
			}
			return cl.Patch(ctx, obj, patch, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := i.before(ctx, obj); err != nil {
				return err
			}
			return cl.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			if err := i.before(ctx, obj); err != nil {
				return err
			}
			return cl.SubResource(sub).Patch(ctx, obj, patch, opts...)
		},
	}
}

// Client wraps c (the controller's client: cache reads, API writes) so that its writes go through the
// interferer.
func (i *Interferer) Client(c client.Client) client.Client {
	return Intercept(c, i.Funcs())
}

// Intercept wraps a controller's client (which never watches) with interceptor functions.
func Intercept(c client.Client, funcs interceptor.Funcs) client.Client {
	return interceptor.NewClient(watchless{c}, funcs)
}

// watchless lets a plain client be wrapped by an interceptor, which wants a client.WithWatch; controllers never
// watch through their client.
type watchless struct{ client.Client }

func (watchless) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported")
}

// ReconcileUntil runs r, wrapped as the operator registers it (deps.RetryTransient), until done reports true or
// passes run out. Every pass must end without an error: a conflict has to be retried or requeued quietly, since
// controller-runtime logs a returned error as "Reconciler error" with a stack trace. It fails the test if done
// never holds (with done's last message) or if the interferer never interfered (the test tested nothing).
func ReconcileUntil(t testing.TB, r reconcile.Reconciler, req reconcile.Request, i *Interferer, passes int, done func() (bool, string)) {
	t.Helper()
	wrapped := deps.RetryTransient(r)
	msg := ""
	for n := 0; n < passes; n++ {
		if _, err := wrapped.Reconcile(context.Background(), req); err != nil {
			t.Fatalf("pass %d returned %v; a write that lost a race must be retried or requeued, not returned", n+1, err)
		}
		var ok bool
		if ok, msg = done(); ok {
			if hit, _ := i.Interfered(); !hit {
				t.Fatalf("no write was interfered with: the test does not test anything")
			}
			return
		}
		i.waitSeen(t)
	}
	hit, what := i.Interfered()
	t.Fatalf("after %d passes (interfered: %v, %s): %s", passes, hit, what, msg)
}
