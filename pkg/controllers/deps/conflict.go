package deps

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	// conflictBackoffBase is the wait after an object's first optimistic-lock conflict in a row; each further
	// one doubles it, up to conflictBackoffMax.
	conflictBackoffBase = 100 * time.Millisecond
	conflictBackoffMax  = 5 * time.Second
)

// ConflictBackoff spaces the retries of a reconcile whose writes meet a stale copy (an optimistic-lock
// conflict): the first retry comes soon, since the cache usually holds the newer object a moment later, and
// each conflict in a row for the same object doubles the wait. A fixed short wait turns a lagging cache (an
// API server busy with a large scale-out) into a storm: with a thousand NodeClaims retried every 100 ms the
// controller sent tens of thousands of doomed writes a minute and made the lag worse.
// It is safe for concurrent use; the zero value is not usable (NewConflictBackoff).
type ConflictBackoff struct {
	limiter workqueue.TypedRateLimiter[string]
}

// NewConflictBackoff returns a backoff starting at 100 ms and capped at 5 s.
func NewConflictBackoff() *ConflictBackoff {
	return &ConflictBackoff{limiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](conflictBackoffBase, conflictBackoffMax)}
}

// Conflict records one more conflict in a row for key and returns how long to wait before the next pass.
func (b *ConflictBackoff) Conflict(key string) time.Duration { return b.limiter.When(key) }

// Done forgets key's conflicts: its pass ended without one (or the object is gone).
func (b *ConflictBackoff) Done(key string) { b.limiter.Forget(key) }

// RequeueOnConflict returns a pass's result, except that a pass that lost an optimistic-lock race (a stale cache,
// a concurrent writer) is requeued after wait instead of reported as an error: such conflicts are expected, and
// logged at debug level only.
func RequeueOnConflict(ctx context.Context, wait time.Duration, res reconcile.Result, err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		log.FromContext(ctx).V(1).Info("conflict, retrying", "error", err.Error())
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	return res, err
}
