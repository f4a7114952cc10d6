package resolve

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
)

// fakeSSM answers GetParameter from a map and counts the calls per name.
type fakeSSM struct {
	values map[string]string
	calls  map[string]int
}

func (f *fakeSSM) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	name := aws.ToString(in.Name)
	f.calls[name]++
	v, ok := f.values[name]
	if !ok {
		return nil, &ssmtypes.ParameterNotFound{Message: aws.String("parameter " + name + " not found")}
	}
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Name: in.Name, Value: aws.String(v)}}, nil
}

// fakeImages answers DescribeImages filtered by image-id from a set of images.
type fakeImages struct {
	sdk.EC2API
	images map[string]ec2types.Image
}

func (f *fakeImages) DescribeImages(_ context.Context, in *ec2.DescribeImagesInput, _ ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error) {
	out := &ec2.DescribeImagesOutput{}
	for _, flt := range in.Filters {
		if aws.ToString(flt.Name) != "image-id" {
			continue
		}
		for _, id := range flt.Values {
			if img, ok := f.images[id]; ok {
				out.Images = append(out.Images, img)
			}
		}
	}
	return out, nil
}

type ssmFixture struct {
	r      *Resolver
	ssm    *fakeSSM
	ec2    *fakeImages
	clock  *clocktesting.FakeClock
	params []string
}

// newSSMFixture publishes one AMI (ami-1) behind every parameter of al2023@<version> for Kubernetes 1.34.
func newSSMFixture(t *testing.T, version string) *ssmFixture {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	params, err := AliasParameters("al2023@"+version, "1.34")
	if err != nil {
		t.Fatal(err)
	}
	f := &ssmFixture{ssm: &fakeSSM{values: map[string]string{}, calls: map[string]int{}},
		ec2: &fakeImages{images: map[string]ec2types.Image{}}, clock: clk}
	for _, p := range params {
		f.params = append(f.params, p.Path)
	}
	f.r = New(&sdk.Clients{EC2: f.ec2, SSM: f.ssm, Region: "us-west-2"}, tags.Cluster{Name: "dovetail", UID: "uid"}, clk)
	f.publish("ami-1", time.Time{})
	return f
}

// publish points every alias parameter at a new image, deprecated at deprecation (zero: never).
func (f *ssmFixture) publish(id string, deprecation time.Time) {
	img := ec2types.Image{ImageId: aws.String(id), Name: aws.String(id), State: ec2types.ImageStateAvailable,
		CreationDate: aws.String(f.clock.Now().UTC().Format(time.RFC3339))}
	if !deprecation.IsZero() {
		img.DeprecationTime = aws.String(deprecation.UTC().Format(time.RFC3339))
	}
	f.ec2.images[id] = img
	for _, p := range f.params {
		f.ssm.values[p] = id
	}
}

// resolve returns the distinct image IDs the alias resolves to, and how many GetParameter calls it made.
func (f *ssmFixture) resolve(t *testing.T, alias string) ([]string, int) {
	t.Helper()
	before := 0
	for _, n := range f.ssm.calls {
		before += n
	}
	amis, err := f.r.AMIs(context.Background(), &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{
		AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: alias}}}}, "1.34")
	if err != nil {
		t.Fatalf("AMIs(%s): %v", alias, err)
	}
	var ids []string
	for _, a := range amis {
		if !slices.Contains(ids, a.ID) {
			ids = append(ids, a.ID)
		}
	}
	sort.Strings(ids)
	after := 0
	for _, n := range f.ssm.calls {
		after += n
	}
	return ids, after - before
}

// TestAliasParametersAreKeptADay: an alias's SSM parameters are read once and kept 24 hours, so a new AMI release
// reaches the node class only after that (a release reaches clusters gradually, as with Karpenter).
func TestAliasParametersAreKeptADay(t *testing.T) {
	f := newSSMFixture(t, "latest")
	ids, calls := f.resolve(t, "al2023@latest")
	if d := cmp.Diff([]string{"ami-1"}, ids); d != "" || calls != len(f.params) {
		t.Fatalf("first resolution: %d calls (want %d), ids diff %s", calls, len(f.params), d)
	}
	f.publish("ami-2", time.Time{})
	f.clock.Step(AliasParameterTTL - time.Minute)
	if ids, calls := f.resolve(t, "al2023@latest"); calls != 0 || !cmp.Equal(ids, []string{"ami-1"}) {
		t.Errorf("within the day: ids %v after %d GetParameter calls, want ami-1 and none", ids, calls)
	}
	f.clock.Step(time.Minute)
	if ids, calls := f.resolve(t, "al2023@latest"); calls != len(f.params) || !cmp.Equal(ids, []string{"ami-2"}) {
		t.Errorf("after the day: ids %v after %d GetParameter calls, want ami-2 and %d", ids, calls, len(f.params))
	}
}

// TestLatestAliasIsReadAgainWhenItsAMIIsDeprecated: a remembered "latest" value whose AMI is deprecated is read
// again at once; a pinned version keeps its value.
func TestLatestAliasIsReadAgainWhenItsAMIIsDeprecated(t *testing.T) {
	for _, c := range []struct {
		version   string
		wantAfter string
		wantCalls bool
	}{
		{"latest", "ami-2", true},
		{"v20261101", "ami-1", false},
	} {
		t.Run(c.version, func(t *testing.T) {
			f := newSSMFixture(t, c.version)
			f.ec2.images["ami-1"] = func() ec2types.Image {
				img := f.ec2.images["ami-1"]
				img.DeprecationTime = aws.String(f.clock.Now().Add(time.Hour).UTC().Format(time.RFC3339))
				return img
			}()
			alias := "al2023@" + c.version
			if ids, _ := f.resolve(t, alias); !cmp.Equal(ids, []string{"ami-1"}) {
				t.Fatalf("first resolution: %v", ids)
			}
			f.publish("ami-2", time.Time{})
			f.ec2.images["ami-1"] = func() ec2types.Image {
				img := f.ec2.images["ami-1"]
				img.DeprecationTime = aws.String(f.clock.Now().Add(time.Hour).UTC().Format(time.RFC3339))
				return img
			}()
			f.clock.Step(2 * time.Hour) // ami-1 is deprecated now, well within the parameters' day
			ids, calls := f.resolve(t, alias)
			if !cmp.Equal(ids, []string{c.wantAfter}) || (calls > 0) != c.wantCalls {
				t.Errorf("after ami-1's deprecation: ids %v after %d GetParameter calls; want %s, calls %t", ids, calls, c.wantAfter, c.wantCalls)
			}
		})
	}
}

// TestCustomParameterIsKeptFiveMinutes: a parameter named by an amiSelectorTerm is read again after 5 minutes; a
// parameter that does not exist is not remembered.
func TestCustomParameterIsKeptFiveMinutes(t *testing.T) {
	f := newSSMFixture(t, "latest")
	f.ssm.values["/team/ami"] = "ami-1"
	nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: []awsv1.AMISelectorTerm{{SSMParameter: "/team/ami"}, {SSMParameter: "/team/missing"}}}}
	ctx := context.Background()
	for i, step := range []time.Duration{0, CustomParameterTTL - time.Second, time.Second} {
		f.clock.Step(step)
		if _, err := f.r.AMIs(ctx, nc, "1.34"); err != nil {
			t.Fatalf("resolution %d: %v", i, err)
		}
	}
	if got := f.ssm.calls["/team/ami"]; got != 2 {
		t.Errorf("/team/ami read %d times over 5 minutes and a second, want 2", got)
	}
	if got := f.ssm.calls["/team/missing"]; got != 3 {
		t.Errorf("/team/missing read %d times in 3 resolutions, want 3 (not found is not remembered)", got)
	}
}
