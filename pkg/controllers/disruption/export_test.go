package disruption

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// CommandWorkers is commandWorkers, for the tests of package disruption_test.
const CommandWorkers = commandWorkers

// WatchChanges starts counting the changes a decision at rest reads from informers' notifications, as Register
// does, for the tests of package disruption_test.
func (c *Controller) WatchChanges(ctx context.Context, informers cache.Informers) error {
	return c.changes.Watch(ctx, informers, watchedKinds()...)
}

// NodeChanged is nodeChanged.
var NodeChanged = nodeChanged
