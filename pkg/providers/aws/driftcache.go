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
type driftInstances struct {
	clock clock.Clock
	mu    sync.Mutex
	byID  map[string]driftInstance
	swept time.Time
}

type driftInstance struct {
	inst *instance.Instance
	at   time.Time
}

func newDriftInstances(clk clock.Clock) *driftInstances {
	return &driftInstances{clock: clk, byID: map[string]driftInstance{}}
}

// get returns the instance's description, from memory when it is younger than DriftInstanceTTL, otherwise from
// describe (whose result is remembered; an error is not). A remembered description holds only the ID, image,
// subnet and security groups (what Drift compares).
func (d *driftInstances) get(ctx context.Context, id string, describe func(context.Context, string) (*instance.Instance, error)) (*instance.Instance, error) {
	now := d.clock.Now()
	d.mu.Lock()
	e, ok := d.byID[id]
	d.mu.Unlock()
	if ok && now.Sub(e.at) < DriftInstanceTTL {
		return e.inst, nil
	}
	inst, err := describe(ctx, id)
	if err != nil {
		return nil, err
	}
	// Only what Drift compares is kept: a whole description (tags, names, times) a node was ~1 MB at 1,000 nodes.
	kept := &instance.Instance{ID: inst.ID, ImageID: inst.ImageID, SubnetID: inst.SubnetID, SecurityGroupIDs: inst.SecurityGroupIDs}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.byID[id] = driftInstance{inst: kept, at: now}
	if now.Sub(d.swept) >= DriftInstanceTTL {
		// Forget expired descriptions (terminated instances are never asked about again).
		d.swept = now
		for k, v := range d.byID {
			if now.Sub(v.at) >= DriftInstanceTTL {
				delete(d.byID, k)
			}
		}
	}
	return kept, nil
}
