package aws

import (
	"context"
	"fmt"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/zonalshift"
)

var _ cloudprovider.ZonalShiftWatcher = (*CloudProvider)(nil)

// EnableZonalShift makes the provider follow the cluster's ARC zonal shifts (ENABLE_ZONAL_SHIFT=true): it reads
// the cluster's ARN from EKS DescribeCluster and checks that ARC zonal shift knows the cluster. An error means
// the operator must not start. Call it before the provider is used.
func (p *CloudProvider) EnableZonalShift(ctx context.Context) error {
	arn, err := zonalshift.Validate(ctx, p.clients.EKS, p.clients.ARC, p.settings.ClusterName)
	if err != nil {
		return err
	}
	p.zonalShifts = zonalshift.New(p.clients.ARC, p.clock, arn)
	return nil
}

// ZonalShiftEnabled reports whether EnableZonalShift succeeded.
func (p *CloudProvider) ZonalShiftEnabled() bool { return p.zonalShifts != nil }

// UpdateZonalShifts reads the cluster's zonal shifts again (a no-op when they are not followed).
func (p *CloudProvider) UpdateZonalShifts(ctx context.Context) error {
	if p.zonalShifts == nil {
		return nil
	}
	return p.zonalShifts.Update(ctx)
}

// ShiftedZoneIDs returns the zone IDs shifted away from now, as last read.
func (p *CloudProvider) ShiftedZoneIDs() []string {
	if p.zonalShifts == nil {
		return nil
	}
	return p.zonalShifts.ShiftedZoneIDs()
}

// NodePoolZones returns the zones (name and ID) of the subnets of the NodePool's EC2NodeClass.
func (p *CloudProvider) NodePoolZones(ctx context.Context, nodePool *karpv1.NodePool) ([]cloudprovider.Zone, error) {
	nc, err := p.nodeClass(ctx, nodePool.Spec.Template.Spec.NodeClassRef)
	if err != nil {
		return nil, fmt.Errorf("nodepool %s: %w", nodePool.Name, err)
	}
	return nodeClassZones(nc), nil
}

// nodeClassZones lists the zones of the node class's resolved subnets, once each, in status order.
func nodeClassZones(nc *awsv1.EC2NodeClass) []cloudprovider.Zone {
	seen := map[string]bool{}
	var out []cloudprovider.Zone
	for _, s := range nc.Status.Subnets {
		if seen[s.Zone] {
			continue
		}
		seen[s.Zone] = true
		out = append(out, cloudprovider.Zone{Name: s.Zone, ID: s.ZoneID})
	}
	return out
}

// shiftedZoneNames returns the names of the node class's zones whose IDs are shifted away from now (nil when
// shifts are not followed or none applies).
func (p *CloudProvider) shiftedZoneNames(ctx context.Context, nc *awsv1.EC2NodeClass) map[string]bool {
	if p.zonalShifts == nil {
		return nil
	}
	var out map[string]bool
	for _, z := range nodeClassZones(nc) {
		if p.zonalShifts.IsShifted(ctx, z.ID) {
			if out == nil {
				out = map[string]bool{}
			}
			out[z.Name] = true
		}
	}
	return out
}

// isZoneIDShifted reports whether zone ID is shifted away from now (false when shifts are not followed).
func (p *CloudProvider) isZoneIDShifted(ctx context.Context, zoneID string) bool {
	return p.zonalShifts != nil && p.zonalShifts.IsShifted(ctx, zoneID)
}

// withoutShiftedZones marks the offerings in the shifted zones unavailable. Instance types are shared and
// immutable: changed ones are copies.
func withoutShiftedZones(its []*cloudprovider.InstanceType, shifted map[string]bool) []*cloudprovider.InstanceType {
	if len(shifted) == 0 {
		return its
	}
	out := make([]*cloudprovider.InstanceType, len(its))
	for i, it := range its {
		out[i] = it
		touched := false
		for _, o := range it.Offerings {
			touched = touched || (o.Available && shifted[o.Zone])
		}
		if !touched {
			continue
		}
		c := *it
		c.Offerings = make([]cloudprovider.Offering, len(it.Offerings))
		for j, o := range it.Offerings {
			if shifted[o.Zone] {
				o.Available = false
			}
			c.Offerings[j] = o
		}
		out[i] = &c
	}
	return out
}
