package aws

import (
	"context"
	"maps"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/instancetype"
	"github.com/dovetail/dovetail/pkg/providers/aws/resolve"
	"github.com/dovetail/dovetail/pkg/requirements"
)

// placementGroupTTL is how long a resolved placement group is used before DescribePlacementGroups is asked again.
const placementGroupTTL = time.Minute

// placementGroupCache remembers, per selector, the last answer and the last placement group found: when EC2
// cannot be asked, launches go on with the group last seen (the node class's PlacementGroupReady says why).
type placementGroupCache struct {
	mu      sync.Mutex
	entries map[awsv1.PlacementGroupSelectorTerm]placementGroupEntry
}

type placementGroupEntry struct {
	at    time.Time
	group *resolve.PlacementGroup
	found bool
	// noMatch is the answer when EC2 said there is no such group.
	noMatch error
}

func newPlacementGroupCache() *placementGroupCache {
	return &placementGroupCache{entries: map[awsv1.PlacementGroupSelectorTerm]placementGroupEntry{}}
}

// ResolvePlacementGroup asks EC2 for the placement group the node class selects (nil when it selects none); a
// *resolve.NoMatchError when there is no available group so named.
func (p *CloudProvider) ResolvePlacementGroup(ctx context.Context, nc *awsv1.EC2NodeClass) (*resolve.PlacementGroup, error) {
	sel := nc.Spec.PlacementGroupSelector
	if sel == nil {
		return nil, nil
	}
	g, err := p.resolver.PlacementGroup(ctx, sel)
	c := p.placementGroups
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil:
		c.entries[*sel] = placementGroupEntry{at: p.clock.Now(), group: g, found: true}
	case isNoMatch(err):
		c.entries[*sel] = placementGroupEntry{at: p.clock.Now(), noMatch: err}
	default:
		if e, ok := c.entries[*sel]; ok && e.found {
			return e.group, err
		}
	}
	return g, err
}

// PlacementGroupID resolves the node class's placement group for its PlacementGroupReady condition: the answer
// of the last minute, else a new one.
func (p *CloudProvider) PlacementGroupID(ctx context.Context, nc *awsv1.EC2NodeClass) (string, error) {
	if sel := nc.Spec.PlacementGroupSelector; sel != nil {
		c := p.placementGroups
		c.mu.Lock()
		e, ok := c.entries[*sel]
		c.mu.Unlock()
		if ok && p.clock.Since(e.at) < placementGroupTTL {
			if e.noMatch != nil {
				return "", e.noMatch
			}
			return e.group.ID, nil
		}
	}
	g, err := p.ResolvePlacementGroup(ctx, nc)
	if err != nil {
		return "", err
	}
	if g == nil {
		return "", nil
	}
	return g.ID, nil
}

// placementGroup returns the placement group instances of the node class launch into: the cached answer while it
// is fresh, else a new one (the last group found when EC2 fails).
func (p *CloudProvider) placementGroup(ctx context.Context, nc *awsv1.EC2NodeClass) *resolve.PlacementGroup {
	sel := nc.Spec.PlacementGroupSelector
	if sel == nil {
		return nil
	}
	c := p.placementGroups
	c.mu.Lock()
	e, ok := c.entries[*sel]
	c.mu.Unlock()
	if ok && p.clock.Since(e.at) < placementGroupTTL {
		return e.group
	}
	g, _ := p.ResolvePlacementGroup(ctx, nc)
	return g
}

func isNoMatch(err error) bool {
	nm, ok := err.(interface{ NoMatch() bool })
	return ok && nm.NoMatch()
}

// placementPartition is the partition a partition-group launch asks for: the lowest the NodeClaim allows among the
// group's partitions (EC2 takes one), 0 when it allows none of them or the group is not a partition group.
func placementPartition(g *resolve.PlacementGroup, reqs []corev1.NodeSelectorRequirement) int32 {
	if g == nil || g.Strategy != resolve.PlacementStrategyPartition || g.PartitionCount < 1 {
		return 0
	}
	for n := int32(1); n <= g.PartitionCount; n++ {
		if requirements.Allows(reqs, awsv1.LabelPlacementGroupPartition, strconv.Itoa(int(n))) {
			return n
		}
	}
	return 0
}

// tenancy is the tenancy a launch asks for: default unless the NodeClaim allows only dedicated.
func tenancy(reqs []corev1.NodeSelectorRequirement) string {
	if requirements.Allows(reqs, awsv1.LabelInstanceTenancy, "default") || !requirements.Allows(reqs, awsv1.LabelInstanceTenancy, "dedicated") {
		return "default"
	}
	return "dedicated"
}

// launchConstraints are the node class settings only some instance types launch with: its network interfaces,
// its placement group's strategy, nested virtualization and connection tracking.
func launchConstraints(nc *awsv1.EC2NodeClass, pg *resolve.PlacementGroup) instancetype.Constraints {
	c := instancetype.Constraints{
		NetworkInterfaces:  nc.Spec.NetworkInterfaces,
		ConnectionTracking: nc.Spec.ConnectionTracking != nil,
	}
	if pg != nil {
		c.PlacementStrategy = pg.Strategy
	}
	if o := nc.Spec.CPUOptions; o != nil && o.NestedVirtualization != nil && *o.NestedVirtualization == "enabled" {
		c.NestedVirtualization = true
	}
	return c
}

// withPlacementGroupLabel gives every instance type the placement group's id label and, in a partition group, the
// group's partitions as a launch label (copies; the listed types are shared).
func withPlacementGroupLabel(its []*cloudprovider.InstanceType, pg *resolve.PlacementGroup) []*cloudprovider.InstanceType {
	if pg == nil {
		return its
	}
	// A partition group lets the launch choose its partition (placementPartition): a pod may ask for one.
	var launch map[string][]string
	if pg.Strategy == resolve.PlacementStrategyPartition && pg.PartitionCount > 0 {
		launch = map[string][]string{awsv1.LabelInstanceTenancy: instancetype.TenancyValues()}
		for n := int32(1); n <= pg.PartitionCount; n++ {
			launch[awsv1.LabelPlacementGroupPartition] = append(launch[awsv1.LabelPlacementGroupPartition], strconv.Itoa(int(n)))
		}
	}
	out := make([]*cloudprovider.InstanceType, len(its))
	for i, it := range its {
		c := *it
		c.Labels = maps.Clone(it.Labels)
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels[awsv1.LabelPlacementGroupID] = pg.ID
		if launch != nil {
			c.LaunchLabels = launch
		}
		out[i] = &c
	}
	return out
}
