package teardown

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

// EC2API is the part of the EC2 client teardown uses (read-only).
type EC2API interface {
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	DescribeLaunchTemplates(context.Context, *ec2.DescribeLaunchTemplatesInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
}

// IAMAPI is the part of the IAM client teardown uses (read-only).
type IAMAPI interface {
	ListInstanceProfiles(context.Context, *iam.ListInstanceProfilesInput, ...func(*iam.Options)) (*iam.ListInstanceProfilesOutput, error)
	GetInstanceProfile(context.Context, *iam.GetInstanceProfileInput, ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error)
}

// Resource is one AWS resource still tagged for the cluster.
type Resource struct {
	Kind   string
	ID     string
	Detail string
}

func (r Resource) String() string {
	if r.Detail == "" {
		return r.Kind + " " + r.ID
	}
	return r.Kind + " " + r.ID + " (" + r.Detail + ")"
}

// Leftovers are the AWS resources of the cluster that still exist.
type Leftovers struct {
	Instances        []Resource
	LaunchTemplates  []Resource
	InstanceProfiles []Resource
	// OtherCluster counts resources tagged with this cluster's name but another cluster's UID: a different
	// cluster of the same name owns them and they are left alone.
	OtherCluster int
	// Unattributed are resources tagged with this cluster's name and no cluster UID that the controller has not
	// adopted: launched by Karpenter (for this cluster but never named by one of its NodeClaims, or for another
	// cluster of the same name), by hand, or by an older release. Nothing proves they are this cluster's, so they
	// are reported and not counted as left.
	Unattributed []Resource
	// Unchecked lists the checks that failed (permissions, API errors); their resources are unknown.
	Unchecked []string
}

// Count is the number of resources left.
func (l Leftovers) Count() int {
	return len(l.Instances) + len(l.LaunchTemplates) + len(l.InstanceProfiles)
}

// All returns every resource left, instances first.
func (l Leftovers) All() []Resource {
	out := append([]Resource(nil), l.Instances...)
	out = append(out, l.LaunchTemplates...)
	return append(out, l.InstanceProfiles...)
}

// liveInstanceStates are the states in which an instance still runs or can be started again; shutting-down
// and terminated instances are on their way out.
var liveInstanceStates = []string{"pending", "running", "stopping", "stopped"}

// awsInventory finds the cluster's resources on AWS.
type awsInventory struct {
	ec2     EC2API
	iam     IAMAPI
	cluster tags.Cluster
}

// instances returns the live instances tagged for the cluster.
func (a *awsInventory) instances(ctx context.Context, l *Leftovers) error {
	in := &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag-key"), Values: []string{a.cluster.ClusterTag()}},
		{Name: aws.String("instance-state-name"), Values: liveInstanceStates},
	}}
	for {
		out, err := a.ec2.DescribeInstances(ctx, in)
		if err != nil {
			return fmt.Errorf("describing instances tagged %s: %w", a.cluster.ClusterTag(), err)
		}
		for _, r := range out.Reservations {
			for _, i := range r.Instances {
				t := ec2Tags(i.Tags)
				state := ""
				if i.State != nil {
					state = string(i.State.Name)
				}
				detail := "state " + state
				if nc := t[awsv1.TagNodeClaim]; nc != "" {
					detail += ", nodeclaim " + nc
				}
				r := Resource{Kind: "instance", ID: aws.ToString(i.InstanceId), Detail: detail}
				if !a.ours(t, l) {
					a.unattributed(t, l, r)
					continue
				}
				l.Instances = append(l.Instances, r)
			}
		}
		if aws.ToString(out.NextToken) == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	sortResources(l.Instances)
	return nil
}

// launchTemplates returns the launch templates Dovetail made for the cluster.
func (a *awsInventory) launchTemplates(ctx context.Context, l *Leftovers) error {
	// The cluster's name tag, not karpenter.k8s.aws/cluster: Karpenter's templates carry the first only.
	in := &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag-key"), Values: []string{a.cluster.ClusterTag()}},
	}}
	for {
		out, err := a.ec2.DescribeLaunchTemplates(ctx, in)
		if err != nil {
			return fmt.Errorf("describing launch templates tagged %s: %w", a.cluster.ClusterTag(), err)
		}
		for _, lt := range out.LaunchTemplates {
			t := ec2Tags(lt.Tags)
			r := Resource{Kind: "launch template", ID: aws.ToString(lt.LaunchTemplateName), Detail: "ec2nodeclass " + t[awsv1.TagNodeClass]}
			if !a.ours(t, l) {
				a.unattributed(t, l, r)
				continue
			}
			l.LaunchTemplates = append(l.LaunchTemplates, r)
		}
		if aws.ToString(out.NextToken) == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	sortResources(l.LaunchTemplates)
	return nil
}

// instanceProfiles returns the instance profiles Dovetail made for the cluster. Their names start with the
// cluster name and an underscore; their tags say whether this cluster made them.
func (a *awsInventory) instanceProfiles(ctx context.Context, l *Leftovers) error {
	in := &iam.ListInstanceProfilesInput{}
	var names []string
	for {
		out, err := a.iam.ListInstanceProfiles(ctx, in)
		if err != nil {
			return fmt.Errorf("listing instance profiles: %w", err)
		}
		for _, p := range out.InstanceProfiles {
			if name := aws.ToString(p.InstanceProfileName); strings.HasPrefix(name, a.cluster.Name+"_") {
				names = append(names, name)
			}
		}
		if !out.IsTruncated || aws.ToString(out.Marker) == "" {
			break
		}
		in.Marker = out.Marker
	}
	for _, name := range names {
		out, err := a.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("getting instance profile %s: %w", name, err)
		}
		if out.InstanceProfile == nil {
			continue
		}
		t := map[string]string{}
		for _, tag := range out.InstanceProfile.Tags {
			t[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
		}
		r := Resource{Kind: "instance profile", ID: name, Detail: "ec2nodeclass " + t[awsv1.TagNodeClass]}
		if !a.ours(t, l) {
			a.unattributed(t, l, r)
			continue
		}
		l.InstanceProfiles = append(l.InstanceProfiles, r)
	}
	sortResources(l.InstanceProfiles)
	return nil
}

// ours reports whether tags mark a resource of this cluster. Resources of a same-named cluster with another
// UID are counted and skipped; resources with the name tag but no UID are reported (made by hand or by an
// older controller) since nothing else will clean them up.
func (a *awsInventory) ours(t map[string]string, l *Leftovers) bool {
	switch a.cluster.Owner(t) {
	case tags.Owned:
		return true
	case tags.OtherCluster:
		l.OtherCluster++
	}
	return false
}

// unattributed records a resource with this cluster's name and no cluster UID.
func (a *awsInventory) unattributed(t map[string]string, l *Leftovers, r Resource) {
	if a.cluster.Owner(t) == tags.NameOnly {
		l.Unattributed = append(l.Unattributed, r)
	}
}

// leftovers runs every check; a failing check is recorded in Unchecked rather than stopping the others.
func (a *awsInventory) leftovers(ctx context.Context) Leftovers {
	var l Leftovers
	for _, check := range []func(context.Context, *Leftovers) error{a.instances, a.launchTemplates, a.instanceProfiles} {
		if err := check(ctx, &l); err != nil {
			l.Unchecked = append(l.Unchecked, err.Error())
		}
	}
	return l
}

func ec2Tags(in []ec2types.Tag) map[string]string {
	out := make(map[string]string, len(in))
	for _, t := range in {
		out[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}

func sortResources(rs []Resource) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].ID < rs[j].ID })
}
