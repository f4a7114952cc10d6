package launchtemplate

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

// templatesEC2 keeps launch templates in memory: enough of EC2 for Ensure and DeleteAll.
type templatesEC2 struct {
	sdk.EC2API
	templates map[string][]ec2types.Tag
}

func (f *templatesEC2) DescribeLaunchTemplates(_ context.Context, in *ec2.DescribeLaunchTemplatesInput, _ ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error) {
	out := &ec2.DescribeLaunchTemplatesOutput{}
	if len(in.LaunchTemplateNames) > 0 {
		for _, n := range in.LaunchTemplateNames {
			if _, ok := f.templates[n]; !ok {
				return nil, &smithy.GenericAPIError{Code: "InvalidLaunchTemplateName.NotFoundException", Message: n}
			}
		}
	}
	for n, t := range f.templates {
		out.LaunchTemplates = append(out.LaunchTemplates, ec2types.LaunchTemplate{LaunchTemplateName: aws.String(n), Tags: t})
	}
	return out, nil
}

func (f *templatesEC2) CreateLaunchTemplate(_ context.Context, in *ec2.CreateLaunchTemplateInput, _ ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error) {
	f.templates[aws.ToString(in.LaunchTemplateName)] = in.TagSpecifications[0].Tags
	return &ec2.CreateLaunchTemplateOutput{}, nil
}

func (f *templatesEC2) DeleteLaunchTemplate(_ context.Context, in *ec2.DeleteLaunchTemplateInput, _ ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error) {
	delete(f.templates, aws.ToString(in.LaunchTemplateName))
	return &ec2.DeleteLaunchTemplateOutput{}, nil
}

// TestUserDataHooks: creating a template reports its raw user data size once (not again while it is known), and
// deleting the node class's templates reports the node class.
func TestUserDataHooks(t *testing.T) {
	api := &templatesEC2{templates: map[string][]ec2types.Tag{}}
	p := NewProvider(api, tags.Cluster{Name: "demo", UID: "u1"}, clocktesting.NewFakeClock(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)))
	var events []string
	p.OnUserData = func(nc string, n int) { events = append(events, "set "+nc+" "+strconv.Itoa(n)) }
	p.OnDeleted = func(nc string) { events = append(events, "deleted "+nc) }
	spec := Spec{NodeClass: nodeClass("al2023@latest", nil), ImageID: "ami-1", UserData: "héllo", InstanceProfile: "prof"}
	for range 2 {
		if _, err := p.Ensure(context.Background(), spec); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := p.DeleteAll(context.Background(), "default"); err != nil || n != 1 {
		t.Fatalf("DeleteAll = %d, %v; want 1 template deleted", n, err)
	}
	if diff := cmp.Diff([]string{"set default 6", "deleted default"}, events); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
}
