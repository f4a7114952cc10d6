package aws

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
)

// DriftInstanceTTL is how long IsDrifted reuses an instance's description. What drift compares of an instance
// (its image, subnet and security groups) is fixed at launch but for security groups changed outside Dovetail,
// which are then seen within this time; the node class side (its resolved AMIs, subnets, security groups and
// hash) is compared afresh on every call. Without it, the NodeClaim disruption controller, which evaluates drift
// on every change of a NodeClaim (each pod bound to its node moves lastPodEventTime), made a DescribeInstances
// call per pod event: ~11,000 calls to place 11,000 pods on 1,000 nodes.
const DriftInstanceTTL = 5 * time.Minute

// driftInstances remembers instance descriptions for IsDrifted (DriftInstanceTTL). Safe for concurrent use.
//
// The descriptions are renewed together: the first call that misses once DriftInstanceTTL passed since the last
// listing lists every instance of the cluster (one paginated DescribeInstances) and remembers them all; only an
// instance that listing did not return (launched since, or not this cluster's) is described on its own. A
// cluster's drift checks thus cost one listing per DriftInstanceTTL plus one call per new instance, rather than
// one call per NodeClaim (5,000 calls every 5 minutes at 5,000 nodes).
type driftInstances struct {
	clock clock.Clock
	// listing serializes listings, so that the misses of many NodeClaims at once make one.
	listing sync.Mutex
	mu      sync.Mutex
	byID    map[string]driftInstance
	swept   time.Time
	listed  time.Time // when the last listing started (successful or not)
}

type driftInstance struct {
	inst *instance.Instance
	at   time.Time
}

func newDriftInstances(clk clock.Clock) *driftInstances {
	return &driftInstances{clock: clk, byID: map[string]driftInstance{}}
}

// get returns the instance's description: from memory when it is younger than DriftInstanceTTL; otherwise from a
// listing of the cluster's instances (list, when DriftInstanceTTL passed since the last one) or from describe. A
// listing's and a description's results are remembered, errors are not (a failed listing is not retried before
// DriftInstanceTTL; the instance is described on its own meanwhile). A remembered description holds only the
// ID, image, subnet, security groups and capacity reservation (what Drift compares).
func (d *driftInstances) get(ctx context.Context, id string, describe func(context.Context, string) (*instance.Instance, error),
	list func(context.Context) ([]*instance.Instance, error)) (*instance.Instance, error) {
	if inst, ok := d.fresh(id); ok {
		return inst, nil
	}
	if list != nil {
		d.listing.Lock()
		// Another caller may have listed while this one waited.
		if inst, ok := d.fresh(id); ok {
			d.listing.Unlock()
			return inst, nil
		}
		now := d.clock.Now()
		d.mu.Lock()
		due := d.listed.IsZero() || now.Sub(d.listed) >= DriftInstanceTTL
		if due {
			d.listed = now
		}
		d.mu.Unlock()
		if due {
			if all, err := list(ctx); err == nil {
				d.remember(now, all...)
			}
		}
		d.listing.Unlock()
		if inst, ok := d.fresh(id); ok {
			return inst, nil
		}
	}
	now := d.clock.Now()
	inst, err := describe(ctx, id)
	if err != nil {
		return nil, err
	}
	return d.remember(now, inst), nil
}

// listedAt remembers a listing of the cluster's instances made at now by someone else (the garbage collection's, the
// capacity type sync's): with one every 2 minutes, drift checks make no listing of their own.
func (d *driftInstances) listedAt(now time.Time, insts []*instance.Instance) {
	d.remember(now, insts...)
	d.mu.Lock()
	defer d.mu.Unlock()
	if now.After(d.listed) {
		d.listed = now
	}
}

// fresh returns the remembered description of id when it is younger than DriftInstanceTTL.
func (d *driftInstances) fresh(id string) (*instance.Instance, bool) {
	now := d.clock.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.byID[id]
	if ok && now.Sub(e.at) < DriftInstanceTTL {
		return e.inst, true
	}
	return nil, false
}

// remember keeps what Drift compares of each instance, described at now, and forgets expired descriptions
// (terminated instances are never asked about again). It returns what it kept of the last instance.
func (d *driftInstances) remember(now time.Time, insts ...*instance.Instance) *instance.Instance {
	d.mu.Lock()
	defer d.mu.Unlock()
	var kept *instance.Instance
	for _, inst := range insts {
		// Only what Drift compares is kept: a whole description (tags, names, times) a node was ~1 MB at 1,000 nodes.
		kept = &instance.Instance{ID: inst.ID, ImageID: inst.ImageID, SubnetID: inst.SubnetID, SecurityGroupIDs: inst.SecurityGroupIDs,
			CapacityReservationID: inst.CapacityReservationID}
		d.byID[inst.ID] = driftInstance{inst: kept, at: now}
	}
	if now.Sub(d.swept) >= DriftInstanceTTL {
		d.swept = now
		for k, v := range d.byID {
			if now.Sub(v.at) >= DriftInstanceTTL {
				delete(d.byID, k)
			}
		}
	}
	return kept
}
