package resolve

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
)

// Placement group strategies as EC2 names them.
const (
	PlacementStrategyCluster   = "cluster"
	PlacementStrategyPartition = "partition"
	PlacementStrategySpread    = "spread"
)

// PlacementGroup is an available EC2 placement group a node class launches into.
type PlacementGroup struct {
	ID       string
	Name     string
	Strategy string
	// PartitionCount is the number of partitions of a partition group (0 for the other strategies).
	PartitionCount int32
	// SpreadLevel is rack or host for a spread group.
	SpreadLevel string
}

// PlacementGroup returns the available placement group the selector names, or a *NoMatchError when there is none.
func (r *Resolver) PlacementGroup(ctx context.Context, sel *awsv1.PlacementGroupSelectorTerm) (*PlacementGroup, error) {
	if sel == nil {
		return nil, nil
	}
	in := &ec2.DescribePlacementGroupsInput{Filters: []ec2types.Filter{filter("state", "available")}}
	term := describeTerm(nil, "id", sel.ID, "name", sel.Name)
	switch {
	case sel.ID != "":
		in.GroupIds = []string{sel.ID}
	case sel.Name != "":
		in.GroupNames = []string{sel.Name}
	default:
		return nil, fmt.Errorf("spec.placementGroupSelector sets neither id nor name")
	}
	out, err := r.ec2.DescribePlacementGroups(ctx, in)
	if err != nil {
		if placementGroupUnknown[sdk.ErrorCode(err)] {
			return nil, &NoMatchError{What: "placement group", Field: "spec.placementGroupSelector", Terms: describeTerms([]string{term})}
		}
		return nil, sdk.Wrap(err, "describing placement group %s", term)
	}
	for _, g := range out.PlacementGroups {
		if string(g.State) != "" && string(g.State) != "available" {
			continue
		}
		return &PlacementGroup{
			ID: aws.ToString(g.GroupId), Name: aws.ToString(g.GroupName), Strategy: string(g.Strategy),
			PartitionCount: aws.ToInt32(g.PartitionCount), SpreadLevel: string(g.SpreadLevel),
		}, nil
	}
	return nil, &NoMatchError{What: "placement group", Field: "spec.placementGroupSelector", Terms: describeTerms([]string{term})}
}

// placementGroupUnknown are the codes EC2 answers DescribePlacementGroups with for a group that does not exist.
var placementGroupUnknown = map[string]bool{
	"InvalidPlacementGroup.Unknown":     true,
	"InvalidPlacementGroupId.NotFound":  true,
	"InvalidPlacementGroupId.Malformed": true,
}
