package deps

import (
	"context"
	"math/rand/v2"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

const (
	// ConflictRequeue is how long a reconcile waits after an optimistic-concurrency conflict: by then the
	// cache usually holds the newer object.
	ConflictRequeue = time.Second
	// ThrottleRequeue is how long a reconcile waits (plus up to as much again, at random) after the cloud
	// provider was throttled; the SDK has already retried the call with backoff.
	ThrottleRequeue = 10 * time.Second
)

// Transient classifies err: a conflict (the object changed since the cache read it) or a throttled cloud
// provider call are expected and pass by themselves. It returns how long to wait and the kind ("conflict",
// "throttled"), or ok false for any other error (and nil).
func Transient(err error) (wait time.Duration, kind string, ok bool) {
	switch {
	case err == nil:
		return 0, "", false
	case cloudprovider.IsThrottled(err):
		return ThrottleRequeue + rand.N(ThrottleRequeue), "throttled", true
	case apierrors.IsConflict(err):
		return ConflictRequeue, "conflict", true
	}
	return 0, "", false
}

// RetryTransient wraps r so that transient errors (see Transient) are retried after a pause instead of being
// returned: controller-runtime would log each as "Reconciler error" with a stack trace. They are logged at
// V(1) with the error and the wait.
func RetryTransient(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		if wait, kind, ok := Transient(err); ok {
			log.FromContext(ctx).V(1).Info("transient error, retrying", "kind", kind, "error", err.Error(), "retry-in", wait.String())
			return reconcile.Result{RequeueAfter: wait}, nil
		}
		return res, err
	})
}

// LogError logs err under msg: a transient error (see Transient) at V(1) without a stack trace, any other at
// error level. For the loops and side paths whose errors no reconcile returns.
func LogError(ctx context.Context, err error, msg string, keysAndValues ...any) {
	logger := log.FromContext(ctx)
	if _, kind, ok := Transient(err); ok {
		logger.V(1).Info(msg, append(keysAndValues, "kind", kind, "error", err.Error())...)
		return
	}
	logger.Error(err, msg, keysAndValues...)
}
