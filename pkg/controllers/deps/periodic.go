package deps

import (
	"context"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Periodic returns a runnable that calls pass at once and then every interval on clk until its context ends, as
// the leader only (a manager starts runnables that do not say otherwise after it wins the election). A failed pass
// is logged with failMsg and the next one retries; the logger is named name.
func Periodic(name string, clk clock.Clock, interval time.Duration, failMsg string, pass func(context.Context) error) manager.Runnable {
	return PeriodicBy(name, clk, func() time.Duration { return interval }, failMsg, pass)
}

// PeriodicBy is Periodic with the wait after each pass chosen by next, called once the pass ended.
func PeriodicBy(name string, clk clock.Clock, next func() time.Duration, failMsg string, pass func(context.Context) error) manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error {
		ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName(name))
		for {
			if err := pass(ctx); err != nil && ctx.Err() == nil {
				LogError(ctx, err, failMsg)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-clk.After(next()):
			}
		}
	})
}
