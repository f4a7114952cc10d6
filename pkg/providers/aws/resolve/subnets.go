package resolve

import (
	"context"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
)

// Subnets returns the subnets any term selects, ordered by zone and then by free addresses (most first), so the
// first subnet of each zone is the roomiest.
func (r *Resolver) Subnets(ctx context.Context, terms []awsv1.SubnetSelectorTerm) ([]awsv1.Subnet, error) {
	found := map[string]ec2types.Subnet{}
	var described []string
	for _, t := range terms {
		described = append(described, describeTerm(t.Tags, "id", t.ID))
		in := &ec2.DescribeSubnetsInput{}
		if t.ID != "" {
			in.Filters = []ec2types.Filter{filter("subnet-id", t.ID)}
		} else {
			in.Filters = tagFilters(t.Tags)
		}
		pager := ec2.NewDescribeSubnetsPaginator(r.ec2, in)
		for pager.HasMorePages() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				return nil, sdk.Wrap(err, "describing subnets")
			}
			for _, s := range page.Subnets {
				if s.State != "" && s.State != ec2types.SubnetStateAvailable {
					continue
				}
				found[aws.ToString(s.SubnetId)] = s
			}
		}
	}
	if len(found) == 0 {
		return nil, &NoMatchError{What: "subnets", Field: "subnetSelectorTerms", Terms: describeTerms(described)}
	}
	subnets := make([]ec2types.Subnet, 0, len(found))
	for _, s := range found {
		subnets = append(subnets, s)
	}
	sort.Slice(subnets, func(i, j int) bool {
		a, b := subnets[i], subnets[j]
		if za, zb := aws.ToString(a.AvailabilityZone), aws.ToString(b.AvailabilityZone); za != zb {
			return za < zb
		}
		if ia, ib := aws.ToInt32(a.AvailableIpAddressCount), aws.ToInt32(b.AvailableIpAddressCount); ia != ib {
			return ia > ib
		}
		return aws.ToString(a.SubnetId) < aws.ToString(b.SubnetId)
	})
	out := make([]awsv1.Subnet, 0, len(subnets))
	for _, s := range subnets {
		out = append(out, awsv1.Subnet{ID: aws.ToString(s.SubnetId), Zone: aws.ToString(s.AvailabilityZone), ZoneID: aws.ToString(s.AvailabilityZoneId)})
	}
	return out, nil
}

// SecurityGroups returns the security groups any term selects, sorted by id.
func (r *Resolver) SecurityGroups(ctx context.Context, terms []awsv1.SecurityGroupSelectorTerm) ([]awsv1.SecurityGroup, error) {
	found := map[string]awsv1.SecurityGroup{}
	var described []string
	for _, t := range terms {
		described = append(described, describeTerm(t.Tags, "id", t.ID, "name", t.Name))
		in := &ec2.DescribeSecurityGroupsInput{}
		switch {
		case t.ID != "":
			in.Filters = []ec2types.Filter{filter("group-id", t.ID)}
		case t.Name != "":
			in.Filters = append(tagFilters(t.Tags), filter("group-name", t.Name))
		default:
			in.Filters = tagFilters(t.Tags)
		}
		pager := ec2.NewDescribeSecurityGroupsPaginator(r.ec2, in)
		for pager.HasMorePages() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				return nil, sdk.Wrap(err, "describing security groups")
			}
			for _, g := range page.SecurityGroups {
				id := aws.ToString(g.GroupId)
				found[id] = awsv1.SecurityGroup{ID: id, Name: aws.ToString(g.GroupName)}
			}
		}
	}
	if len(found) == 0 {
		return nil, &NoMatchError{What: "security groups", Field: "securityGroupSelectorTerms", Terms: describeTerms(described)}
	}
	out := make([]awsv1.SecurityGroup, 0, len(found))
	for _, g := range found {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
