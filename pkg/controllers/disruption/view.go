package disruption

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/internal/disruptionview"
	core "github.com/dovetail/dovetail/pkg/disruption"
)

// Observe lists what a disruption pass reads (disruptionview.Observe).
func Observe(ctx context.Context, c client.Reader, now time.Time) (*View, error) {
	return disruptionview.Observe(ctx, c, now)
}

// ObserveCached is Observe from the controller's cache (disruptionview.ObserveCached).
func ObserveCached(ctx context.Context, d deps.Deps, now time.Time) (*View, error) {
	return disruptionview.ObserveCached(ctx, d, now)
}

// BuildSnapshot builds the decision's input from a pass's view (disruptionview.BuildSnapshot).
func BuildSnapshot(ctx context.Context, d deps.Deps, v *View) (*core.Snapshot, error) {
	return disruptionview.BuildSnapshot(ctx, d, v)
}
