package aws

import (
	"context"
	"sort"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

var _ cloudprovider.NameConflictDetector = (*CloudProvider)(nil)

// NameConflicts lists the instances (not terminated) and launch templates tagged kubernetes.io/cluster/<name>
// and groups those whose cluster-UID tag names another cluster. Resources without a UID tag (made by hand, an
// older controller or another tool) are not counted: `dovetailctl doctor` reports them.
func (p *CloudProvider) NameConflicts(ctx context.Context) (cloudprovider.NameCheck, error) {
	byUID := map[string][]string{}
	listed := 0
	note := func(t map[string]string, id string) {
		listed++
		if p.cluster.Owner(t) == tags.OtherCluster {
			uid := t[tags.ClusterUID]
			byUID[uid] = append(byUID[uid], id)
		}
	}
	// Decoded as garbage collection's listing is: the ID and tags are all this reads.
	err := instance.EachListed(ctx, p.clients.EC2, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: awssdk.String("tag-key"), Values: []string{p.cluster.ClusterTag()}},
		{Name: awssdk.String("instance-state-name"), Values: []string{"pending", "running", "stopping", "stopped", "shutting-down"}},
	}, MaxResults: awssdk.Int32(instance.ListPageSize)}, func(i ec2types.Instance) {
		note(tags.FromEC2(i.Tags), awssdk.ToString(i.InstanceId))
	})
	if err != nil {
		return cloudprovider.NameCheck{}, sdk.Wrap(err, "listing instances tagged %s", p.cluster.ClusterTag())
	}
	templates := ec2.NewDescribeLaunchTemplatesPaginator(p.clients.EC2, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: awssdk.String("tag-key"), Values: []string{p.cluster.ClusterTag()}},
	}})
	for templates.HasMorePages() {
		page, err := templates.NextPage(ctx)
		if err != nil {
			return cloudprovider.NameCheck{}, sdk.Wrap(err, "listing launch templates tagged %s", p.cluster.ClusterTag())
		}
		for _, lt := range page.LaunchTemplates {
			note(tags.FromEC2(lt.Tags), awssdk.ToString(lt.LaunchTemplateId))
		}
	}
	out := make([]cloudprovider.NameConflict, 0, len(byUID))
	for uid, ids := range byUID {
		sort.Strings(ids)
		out = append(out, cloudprovider.NameConflict{ClusterUID: uid, Resources: ids})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ClusterUID < out[j].ClusterUID })
	return cloudprovider.NameCheck{Conflicts: out, Listed: listed}, nil
}
