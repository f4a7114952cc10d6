package instance

import (
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

// FleetRequest is one launch: the chosen capacity type, the offerings to choose among, the launch template of
// each instance type, and the tags of the instance and its volumes.
type FleetRequest struct {
	CapacityType string
	Choices      []Choice
	// Prioritized launches on-demand in the order of Choices (prioritized allocation) instead of at the cloud's
	// lowest price: set when NodeOverlays changed the prices Choices are sorted by.
	Prioritized bool
	// LaunchTemplates maps an instance type to the name of the launch template it launches with.
	LaunchTemplates map[string]string
	// Tags go on the instance and its volumes at launch.
	Tags map[string]string
	// InstanceTags are the tags of this one launch (the NodeClaim's name). They go on at launch too when the
	// request goes out alone; when it is merged with identical requests into one fleet they are put on the
	// instance afterwards with CreateTags (its volumes keep only Tags).
	InstanceTags map[string]string
	// Queued, when set, is called once the request waits in a launch window, under the window's lock (it must not
	// call back into the provider). A caller that announced the launch (cloudprovider.LaunchNotices) marks it
	// arrived there: marked before, a window could close on idle while the request was still being prepared
	// (its fleet input built and hashed), and the request would go out in a fleet of its own.
	Queued func()
}

// FleetInput builds the CreateFleet request (type instant, one instance, tagged with Tags and InstanceTags): one launch template config per launch
// template with an override per (instance type, subnet), price-capacity-optimized for spot and lowest-price
// for on-demand. Choices whose instance type has no launch template are an error.
func FleetInput(r FleetRequest) (*ec2.CreateFleetInput, error) {
	if len(r.Choices) == 0 {
		return nil, fmt.Errorf("no offerings to launch")
	}
	overrides := map[string][]ec2types.FleetLaunchTemplateOverridesRequest{}
	for i, c := range r.Choices {
		lt, ok := r.LaunchTemplates[c.InstanceType]
		if !ok {
			return nil, fmt.Errorf("no launch template for instance type %s", c.InstanceType)
		}
		o := ec2types.FleetLaunchTemplateOverridesRequest{
			InstanceType: ec2types.InstanceType(c.InstanceType),
			SubnetId:     aws.String(c.SubnetID),
		}
		if r.CapacityType == cloudprovider.CapacityTypeReserved || (r.Prioritized && r.CapacityType == cloudprovider.CapacityTypeOnDemand) {
			o.Priority = aws.Float64(float64(i))
		}
		overrides[lt] = append(overrides[lt], o)
	}
	configs := make([]ec2types.FleetLaunchTemplateConfigRequest, 0, len(overrides))
	for _, n := range slices.Sorted(maps.Keys(overrides)) {
		configs = append(configs, ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{
				LaunchTemplateName: aws.String(n),
				Version:            aws.String("$Latest"),
			},
			Overrides: overrides[n],
		})
	}
	all := maps.Clone(r.Tags)
	if all == nil {
		all = map[string]string{}
	}
	maps.Copy(all, r.InstanceTags)
	in := &ec2.CreateFleetInput{
		Type:                  ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: configs,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity:       aws.Int32(1),
			DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand,
		},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: tags.EC2(all)},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: tags.EC2(all)},
		},
	}
	switch r.CapacityType {
	case cloudprovider.CapacityTypeSpot:
		in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeSpot
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	case cloudprovider.CapacityTypeReserved:
		if r.Choices[0].ReservationType == string(awsv1.CapacityReservationTypeCapacityBlock) {
			in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeCapacityBlock
		}
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{
			AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyPrioritized,
			CapacityReservationOptions: &ec2types.CapacityReservationOptionsRequest{
				UsageStrategy: ec2types.FleetCapacityReservationUsageStrategyUseCapacityReservationsFirst,
			},
		}
	default:
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
		if r.Prioritized {
			in.OnDemandOptions.AllocationStrategy = ec2types.FleetOnDemandAllocationStrategyPrioritized
		}
	}
	return in, nil
}
