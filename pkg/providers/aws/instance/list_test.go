package instance

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
	"github.com/dovetail/dovetail/pkg/providers/aws/unavailable"
)

// pagingEC2 answers DescribeInstances as EC2 does with MaxResults: at most that many instances a page and a
// NextToken while more are left; without MaxResults, every instance at once. It records each call's MaxResults.
type pagingEC2 struct {
	sdk.EC2API
	instances  []ec2types.Instance
	maxResults []int32
}

func (f *pagingEC2) DescribeInstances(_ context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	limit := len(f.instances)
	if in.MaxResults != nil {
		if n := aws.ToInt32(in.MaxResults); n < 5 || n > 1000 {
			return nil, fmt.Errorf("MaxResults %d: EC2 takes 5 to 1000", n)
		}
		limit = int(aws.ToInt32(in.MaxResults))
	}
	f.maxResults = append(f.maxResults, aws.ToInt32(in.MaxResults))
	start := 0
	if in.NextToken != nil {
		var err error
		if start, err = strconv.Atoi(aws.ToString(in.NextToken)); err != nil {
			return nil, err
		}
	}
	end := min(start+limit, len(f.instances))
	out := &ec2.DescribeInstancesOutput{}
	for _, i := range f.instances[start:end] {
		out.Reservations = append(out.Reservations, ec2types.Reservation{Instances: []ec2types.Instance{i}})
	}
	if end < len(f.instances) {
		out.NextToken = aws.String(strconv.Itoa(end))
	}
	return out, nil
}

// TestListPages: a listing asks EC2 for pages of ListPageSize instances (one unpaged answer for the whole cluster
// is held while it is decoded) and returns every owned instance of every page, sorted by ID.
func TestListPages(t *testing.T) {
	const owned = 2*ListPageSize + 3
	api := &pagingEC2{}
	var want []string
	for n := owned; n > 0; n-- {
		id := fmt.Sprintf("i-%017d", n)
		want = append([]string{id}, want...)
		api.instances = append(api.instances, ec2types.Instance{
			InstanceId: aws.String(id), State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning},
			Tags: []ec2types.Tag{{Key: aws.String(tags.ClusterUID), Value: aws.String("u")}, {Key: aws.String("kubernetes.io/cluster/c"), Value: aws.String("owned")}},
		})
	}
	// Another cluster's instance with the same name is left out.
	api.instances = append(api.instances, ec2types.Instance{
		InstanceId: aws.String("i-other"), State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning},
		Tags: []ec2types.Tag{{Key: aws.String(tags.ClusterUID), Value: aws.String("other")}, {Key: aws.String("kubernetes.io/cluster/c"), Value: aws.String("owned")}},
	})
	clk := clocktesting.NewFakeClock(time.Now())
	p := NewProvider(api, tags.Cluster{Name: "c", UID: "u"}, unavailable.New(clk, unavailable.DefaultTTL), clk, BatchWindow{})
	got, err := p.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, i := range got {
		ids = append(ids, i.ID)
	}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("listed instances (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int32{ListPageSize, ListPageSize, ListPageSize}, api.maxResults); diff != "" {
		t.Errorf("MaxResults of each DescribeInstances call (-want +got):\n%s", diff)
	}
}
