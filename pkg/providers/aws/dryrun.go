package aws

import (
	"context"
	"fmt"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

// dryRunTypes are the instance types a dry run launches when the node class offers them with a compatible AMI
// (one x86_64, one arm64, as Karpenter v1.14 prefers); otherwise the first type of the catalog that has one.
var dryRunTypes = []string{"m5.large", "m6g.large"}

// DryRunLaunch checks that the controller may launch with the node class, as Karpenter v1.14 does before a node
// class is ready: it makes sure the launch template of one instance type exists (a real CreateLaunchTemplate
// when it does not), then dry-runs CreateFleet over the node class's subnets and RunInstances in them. A refusal
// for permissions is an *instance.DeniedError naming the call (CreateLaunchTemplate, CreateFleet or
// RunInstances); other failures are returned as they are.
func (p *CloudProvider) DryRunLaunch(ctx context.Context, nc *awsv1.EC2NodeClass) error {
	if err := readyForLaunch(nc); err != nil {
		return cloudprovider.NewNodeClassNotReadyError(err)
	}
	its, err := p.instanceTypesFor(ctx, nc)
	if err != nil {
		return err
	}
	it := dryRunType(its, nc.Status.AMIs)
	if it == nil {
		return cloudprovider.NewNodeClassNotReadyError(fmt.Errorf("EC2NodeClass %q: no instance type has a compatible AMI", nc.Name))
	}
	info, err := p.clusterInfo.get(ctx)
	if err != nil {
		return err
	}
	choices := make([]instance.Choice, 0, len(nc.Status.Subnets))
	for _, s := range nc.Status.Subnets {
		choices = append(choices, instance.Choice{InstanceType: it.Name, Zone: s.Zone, ZoneID: s.ZoneID, SubnetID: s.ID,
			CapacityType: cloudprovider.CapacityTypeOnDemand})
	}
	claim := &karpv1.NodeClaim{}
	ltByType, _, choices, err := p.launchTemplates(ctx, nc, claim, cloudprovider.CapacityTypeOnDemand, choices,
		map[string]*cloudprovider.InstanceType{it.Name: it}, info)
	if err != nil {
		return instance.Denied("CreateLaunchTemplate", err)
	}
	all := p.cluster.ForInstance(tags.Instance{NodeClass: nc.Name, NodeClassTags: nc.Spec.Tags})
	// No NodeClaim: its tags stay off.
	delete(all, awsv1.TagNodeClaim)
	delete(all, awsv1.TagName)
	return p.instances.DryRun(ctx, instance.FleetRequest{
		CapacityType: cloudprovider.CapacityTypeOnDemand, Choices: choices, LaunchTemplates: ltByType, Tags: all,
	})
}

// dryRunType returns the instance type a dry run launches: the first of dryRunTypes that its has with a
// compatible AMI, else the first of its with one.
func dryRunType(its []*cloudprovider.InstanceType, amis []awsv1.AMI) *cloudprovider.InstanceType {
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range its {
		byName[it.Name] = it
	}
	for _, n := range dryRunTypes {
		if it := byName[n]; it != nil {
			if _, ok := amiFor(amis, it.Labels); ok {
				return it
			}
		}
	}
	for _, it := range its {
		if _, ok := amiFor(amis, it.Labels); ok {
			return it
		}
	}
	return nil
}
