package deps

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

func TestRetryTransient(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "karpenter.sh", Resource: "nodeclaims"}, "a", errors.New("the object has been modified"))
	other := errors.New("boom")
	for _, tc := range []struct {
		name             string
		err              error
		wantErr          error
		minWait, maxWait time.Duration
	}{
		{name: "success", err: nil},
		{name: "conflict, wrapped", err: fmt.Errorf("recording disruption on nodeclaim a: %w", conflict), minWait: ConflictRequeue, maxWait: ConflictRequeue},
		{name: "throttled", err: fmt.Errorf("terminating: %w", cloudprovider.NewThrottledError(other)), minWait: ThrottleRequeue, maxWait: 2 * ThrottleRequeue},
		{name: "joined with a conflict", err: errors.Join(fmt.Errorf("x: %w", conflict)), minWait: ConflictRequeue, maxWait: ConflictRequeue},
		{name: "other error", err: other, wantErr: other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := RetryTransient(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
				return reconcile.Result{}, tc.err
			}))
			res, err := r.Reconcile(context.Background(), reconcile.Request{})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if res.RequeueAfter < tc.minWait || res.RequeueAfter > tc.maxWait {
				t.Errorf("RequeueAfter = %v, want in [%v, %v]", res.RequeueAfter, tc.minWait, tc.maxWait)
			}
		})
	}
}
