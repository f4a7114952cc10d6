package aws

import (
	"context"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
)

// statusPageSize is the MaxResults of each DescribeInstanceStatus page (EC2's maximum).
const statusPageSize = 1000

// scheduledEventCodes are the scheduled events that make an instance unhealthy.
var scheduledEventCodes = []string{
	string(ec2types.EventCodeInstanceReboot), string(ec2types.EventCodeSystemReboot),
	string(ec2types.EventCodeSystemMaintenance), string(ec2types.EventCodeInstanceRetirement),
	string(ec2types.EventCodeInstanceStop),
}

// statusFilterSets select impaired instance checks, impaired system checks and scheduled events. EC2 ANDs
// filters of different names, so each is its own paginated pass; an instance found by several passes is kept once.
// EBS status checks are not consulted: a failing volume may be a pod's, not the node's.
var statusFilterSets = [][]ec2types.Filter{
	{{Name: awssdk.String("instance-status.status"), Values: []string{string(ec2types.SummaryStatusImpaired)}}},
	{{Name: awssdk.String("system-status.status"), Values: []string{string(ec2types.SummaryStatusImpaired)}}},
	{{Name: awssdk.String("event.code"), Values: scheduledEventCodes}},
}

var _ cloudprovider.InstanceStatusLister = (*CloudProvider)(nil)

// UnhealthyInstances lists the account's instances whose instance or system status check fails or that have a
// scheduled event, with DescribeInstanceStatus (a few paginated calls for the whole region, not one per
// instance). It lists every instance of the region: the caller keeps those it owns.
func (p *CloudProvider) UnhealthyInstances(ctx context.Context) ([]cloudprovider.InstanceStatus, error) {
	return unhealthyInstances(ctx, p.clients.EC2)
}

func unhealthyInstances(ctx context.Context, api sdk.EC2API) ([]cloudprovider.InstanceStatus, error) {
	var out []cloudprovider.InstanceStatus
	index := map[string]int{}
	for _, filters := range statusFilterSets {
		pager := ec2.NewDescribeInstanceStatusPaginator(api, &ec2.DescribeInstanceStatusInput{
			Filters: filters, MaxResults: awssdk.Int32(statusPageSize),
		})
		for pager.HasMorePages() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				return nil, sdk.Wrap(err, "describing instance status")
			}
			for _, st := range page.InstanceStatuses {
				id := awssdk.ToString(st.InstanceId)
				if _, seen := index[id]; seen || id == "" {
					continue
				}
				index[id] = len(out)
				out = append(out, cloudprovider.InstanceStatus{InstanceID: id, Checks: statusChecks(st)})
			}
		}
	}
	return out, nil
}

// statusChecks returns the failed instance and system checks and the scheduled events of one answer.
func statusChecks(st ec2types.InstanceStatus) []cloudprovider.StatusCheck {
	var out []cloudprovider.StatusCheck
	failed := func(sum *ec2types.InstanceStatusSummary, cat cloudprovider.StatusCategory) {
		if sum == nil {
			return
		}
		for _, d := range sum.Details {
			if d.Status != ec2types.StatusTypeFailed {
				continue
			}
			out = append(out, cloudprovider.StatusCheck{Category: cat, Name: string(d.Name),
				ImpairedSince: awssdk.ToTime(d.ImpairedSince)})
		}
	}
	failed(st.InstanceStatus, cloudprovider.StatusCategoryInstance)
	failed(st.SystemStatus, cloudprovider.StatusCategorySystem)
	for _, e := range st.Events {
		out = append(out, cloudprovider.StatusCheck{Category: cloudprovider.StatusCategoryEvent, Name: string(e.Code),
			NotBefore: awssdk.ToTime(e.NotBefore)})
	}
	return out
}
