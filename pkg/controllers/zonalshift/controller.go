package zonalshift

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/requirements"
)

// Name is the controller's name.
const Name = "zonalshift"

// Interval is how often the shifts are read (Karpenter v1.14's interval; not a setting there either).
const Interval = 30 * time.Second

// Event reasons, as Karpenter names them.
const (
	// ReasonActive (Warning) says offerings in a zone the NodePool launches into are unavailable.
	ReasonActive = "ZonalShiftActive"
	// ReasonCleared (Normal) says they are available again.
	ReasonCleared = "ZonalShiftCleared"
)

// Controller reads the zonal shifts every Interval and publishes an event on each NodePool that can launch into a
// zone as the zone is shifted away from or back. It runs on the leader only, and only with ENABLE_ZONAL_SHIFT=true.
type Controller struct {
	deps    deps.Deps
	watcher cloudprovider.ZonalShiftWatcher
	// previous are the zone IDs shifted away from as of the last published change.
	previous []string
}

// NewController builds the controller; it does nothing unless the cloud provider (under its metrics and overlay
// wrappers) follows zonal shifts.
func NewController(d deps.Deps) *Controller {
	w, _ := cloudprovider.Find[cloudprovider.ZonalShiftWatcher](d.CloudProvider)
	return &Controller{deps: d, watcher: w}
}

// Register adds the polling loop to the manager (leader only), or nothing when zonal shifts are not followed.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	if c.watcher == nil || !c.watcher.ZonalShiftEnabled() {
		return nil
	}
	return m.Add(deps.Periodic(Name, c.deps.Clock, Interval, "following zonal shifts (allow arc-zonal-shift:GetManagedResource)", c.Poll))
}

// Poll reads the shifts once and publishes the events of the zones shifted or cleared since the last poll. After
// a failed publication the same changes are published again on the next poll.
func (c *Controller) Poll(ctx context.Context) error {
	if err := c.watcher.UpdateZonalShifts(ctx); err != nil {
		return fmt.Errorf("updating zonal shifts: %w", err)
	}
	current := c.watcher.ShiftedZoneIDs()
	if slices.Equal(current, c.previous) {
		return nil
	}
	shifted, cleared := diff(c.previous, current)
	log.FromContext(ctx).Info("zonal shifts changed", "shifted-zone-ids", current, "new", shifted, "ended", cleared)
	if err := c.publish(ctx, shifted, cleared); err != nil {
		return err
	}
	c.previous = current
	return nil
}

// publish records the events of the shifted and cleared zone IDs on every NodePool that can launch there.
func (c *Controller) publish(ctx context.Context, shifted, cleared []string) error {
	pools := &karpv1.NodePoolList{}
	if err := c.deps.Client.List(ctx, pools); err != nil {
		return fmt.Errorf("listing nodepools: %w", err)
	}
	sort.Slice(pools.Items, func(i, j int) bool { return pools.Items[i].Name < pools.Items[j].Name })
	var errs []error
	for i := range pools.Items {
		np := &pools.Items[i]
		if np.Spec.Template.Spec.NodeClassRef == nil {
			continue
		}
		zones, err := c.watcher.NodePoolZones(ctx, np)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if c.deps.Recorder == nil {
			continue
		}
		for _, id := range shifted {
			if z, ok := Affected(np, zones, id); ok {
				c.deps.Recorder.Eventf(np, corev1.EventTypeWarning, ReasonActive,
					"Zonal shift detected: offerings in zone %s (%s) are unavailable for this NodePool", z.Name, z.ID)
			}
		}
		for _, id := range cleared {
			if z, ok := Affected(np, zones, id); ok {
				c.deps.Recorder.Eventf(np, corev1.EventTypeNormal, ReasonCleared,
					"Zonal shift cleared: offerings in zone %s (%s) are restored for this NodePool", z.Name, z.ID)
			}
		}
	}
	return errors.Join(errs...)
}

// Affected returns the zone with the given ID among the NodePool's node class zones, and whether the NodePool's
// requirements allow launching there (by zone name and by zone ID).
func Affected(np *karpv1.NodePool, zones []cloudprovider.Zone, zoneID string) (cloudprovider.Zone, bool) {
	i := slices.IndexFunc(zones, func(z cloudprovider.Zone) bool { return z.ID == zoneID })
	if i < 0 {
		return cloudprovider.Zone{}, false
	}
	z := zones[i]
	reqs := make([]corev1.NodeSelectorRequirement, 0, len(np.Spec.Template.Spec.Requirements))
	for _, r := range np.Spec.Template.Spec.Requirements {
		reqs = append(reqs, r.NodeSelectorRequirement)
	}
	if !requirements.Allows(reqs, corev1.LabelTopologyZone, z.Name) || !requirements.Allows(reqs, awsv1.LabelTopologyZoneID, z.ID) {
		return cloudprovider.Zone{}, false
	}
	return z, true
}

// diff returns the zone IDs in current but not previous (shifted) and in previous but not current (cleared);
// both inputs are sorted.
func diff(previous, current []string) (shifted, cleared []string) {
	for _, z := range current {
		if !slices.Contains(previous, z) {
			shifted = append(shifted, z)
		}
	}
	for _, z := range previous {
		if !slices.Contains(current, z) {
			cleared = append(cleared, z)
		}
	}
	return shifted, cleared
}
