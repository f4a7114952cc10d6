package instance

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

func it(name, arch string, offerings ...cloudprovider.Offering) *cloudprovider.InstanceType {
	return &cloudprovider.InstanceType{
		Name:      name,
		Labels:    map[string]string{corev1.LabelInstanceTypeStable: name, corev1.LabelArchStable: arch},
		Offerings: offerings,
	}
}

func off(zone, ct string, price float64) cloudprovider.Offering {
	return cloudprovider.Offering{Zone: zone, CapacityType: ct, Price: price, Available: true}
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

var subnets = []awsv1.Subnet{
	{ID: "subnet-a", Zone: "us-west-2a", ZoneID: "usw2-az1"},
	{ID: "subnet-a2", Zone: "us-west-2a", ZoneID: "usw2-az1"},
	{ID: "subnet-b", Zone: "us-west-2b", ZoneID: "usw2-az2"},
}

func TestSelectOverrides(t *testing.T) {
	spot, od := cloudprovider.CapacityTypeSpot, cloudprovider.CapacityTypeOnDemand
	types := []*cloudprovider.InstanceType{
		it("m5.large", "amd64", off("us-west-2a", spot, 0.04), off("us-west-2b", spot, 0.05), off("us-west-2a", od, 0.096), off("us-west-2c", spot, 0.01)),
		it("c5.large", "amd64", off("us-west-2a", spot, 0.03), off("us-west-2a", od, 0.085)),
		it("m6g.large", "arm64", off("us-west-2a", spot, 0.02), off("us-west-2a", od, 0.077)),
	}
	unavailableSpot := it("r5.large", "amd64", cloudprovider.Offering{Zone: "us-west-2a", CapacityType: spot, Price: 0.001}, off("us-west-2a", od, 0.12))
	cases := []struct {
		name       string
		reqs       []corev1.NodeSelectorRequirement
		types      []*cloudprovider.InstanceType
		usable     func(string) bool
		max        int
		minVal     map[string]int
		wantCT     string
		want       []string // type/zone/subnet
		wantErrSub string
	}{
		{
			name:   "spot preferred when allowed, cheapest first, zone without subnet skipped",
			reqs:   []corev1.NodeSelectorRequirement{req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"), req("karpenter.sh/capacity-type", corev1.NodeSelectorOpIn, spot, od)},
			types:  types,
			wantCT: spot,
			want:   []string{"c5.large/us-west-2a/subnet-a", "m5.large/us-west-2a/subnet-a", "m5.large/us-west-2b/subnet-b"},
		},
		{
			name:   "on-demand only",
			reqs:   []corev1.NodeSelectorRequirement{req("karpenter.sh/capacity-type", corev1.NodeSelectorOpIn, od)},
			types:  types,
			wantCT: od,
			want:   []string{"m6g.large/us-west-2a/subnet-a", "c5.large/us-west-2a/subnet-a", "m5.large/us-west-2a/subnet-a"},
		},
		{
			name:   "zone requirement and unusable first subnet",
			reqs:   []corev1.NodeSelectorRequirement{req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2a"), req("karpenter.sh/nodepool", corev1.NodeSelectorOpIn, "default")},
			types:  types,
			usable: func(id string) bool { return id != "subnet-a" },
			wantCT: spot,
			want:   []string{"m6g.large/us-west-2a/subnet-a2", "c5.large/us-west-2a/subnet-a2", "m5.large/us-west-2a/subnet-a2"},
		},
		{
			name:   "zone id requirement",
			reqs:   []corev1.NodeSelectorRequirement{req(awsv1.LabelTopologyZoneID, corev1.NodeSelectorOpIn, "usw2-az2")},
			types:  types,
			wantCT: spot,
			want:   []string{"m5.large/us-west-2b/subnet-b"},
		},
		{
			name:   "unavailable spot offering falls back to on-demand",
			reqs:   []corev1.NodeSelectorRequirement{req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "r5.large")},
			types:  []*cloudprovider.InstanceType{unavailableSpot},
			wantCT: od,
			want:   []string{"r5.large/us-west-2a/subnet-a"},
		},
		{
			name:   "truncated to the cheapest types",
			types:  types,
			max:    2,
			wantCT: spot,
			want:   []string{"m6g.large/us-west-2a/subnet-a", "c5.large/us-west-2a/subnet-a"},
		},
		{
			name:   "truncation keeps minValues families",
			types:  types,
			max:    1,
			minVal: map[string]int{corev1.LabelArchStable: 2},
			wantCT: spot,
			want:   []string{"m6g.large/us-west-2a/subnet-a", "c5.large/us-west-2a/subnet-a"},
		},
		{
			name:       "nothing compatible",
			reqs:       []corev1.NodeSelectorRequirement{req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "s390x")},
			types:      types,
			wantErrSub: "no instance type among 3 satisfies",
		},
		{
			name:       "no offering in allowed zones",
			reqs:       []corev1.NodeSelectorRequirement{req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2c")},
			types:      types,
			wantErrSub: "no available offering",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ct, choices, err := SelectOverrides(SelectInput{Requirements: tc.reqs, InstanceTypes: tc.types, Subnets: subnets, SubnetUsable: tc.usable, Max: tc.max, MinValues: tc.minVal})
			if tc.wantErrSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrSub) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErrSub)
				}
				return
			}
			if err != nil {
				t.Fatalf("SelectOverrides: %v", err)
			}
			var got []string
			for _, c := range choices {
				got = append(got, fmt.Sprintf("%s/%s/%s", c.InstanceType, c.Zone, c.SubnetID))
				if c.CapacityType != ct {
					t.Errorf("choice %v has capacity type %s, selected %s", c, c.CapacityType, ct)
				}
			}
			if ct != tc.wantCT {
				t.Errorf("capacity type = %s, want %s", ct, tc.wantCT)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("choices (-want +got):\n%s", d)
			}
		})
	}
}

func TestFleetInput(t *testing.T) {
	in, err := FleetInput(FleetRequest{
		CapacityType: cloudprovider.CapacityTypeSpot,
		Choices: []Choice{
			{InstanceType: "m6g.large", SubnetID: "subnet-a"},
			{InstanceType: "c5.large", SubnetID: "subnet-a"},
			{InstanceType: "c5.large", SubnetID: "subnet-b"},
		},
		LaunchTemplates: map[string]string{"m6g.large": "lt-arm", "c5.large": "lt-amd"},
		Tags:            map[string]string{"b": "2", "a": "1"},
	})
	if err != nil {
		t.Fatalf("FleetInput: %v", err)
	}
	type cfg struct {
		LT        string
		Overrides []string
	}
	var got []cfg
	for _, c := range in.LaunchTemplateConfigs {
		g := cfg{LT: aws.ToString(c.LaunchTemplateSpecification.LaunchTemplateName)}
		for _, o := range c.Overrides {
			g.Overrides = append(g.Overrides, string(o.InstanceType)+"/"+aws.ToString(o.SubnetId))
		}
		got = append(got, g)
	}
	want := []cfg{{LT: "lt-amd", Overrides: []string{"c5.large/subnet-a", "c5.large/subnet-b"}}, {LT: "lt-arm", Overrides: []string{"m6g.large/subnet-a"}}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("launch template configs (-want +got):\n%s", d)
	}
	if in.Type != ec2types.FleetTypeInstant || in.TargetCapacitySpecification.DefaultTargetCapacityType != ec2types.DefaultTargetCapacityTypeSpot ||
		in.SpotOptions == nil || in.SpotOptions.AllocationStrategy != ec2types.SpotAllocationStrategyPriceCapacityOptimized {
		t.Errorf("fleet is not an instant spot fleet with price-capacity-optimized: %+v", in)
	}
	if len(in.TagSpecifications) != 2 || aws.ToString(in.TagSpecifications[0].Tags[0].Key) != "a" {
		t.Errorf("tag specifications = %+v, want instance and volume with sorted tags", in.TagSpecifications)
	}
	if _, err := FleetInput(FleetRequest{CapacityType: "on-demand", Choices: []Choice{{InstanceType: "x"}}}); err == nil {
		t.Errorf("FleetInput without a launch template for a type succeeded")
	}
}

// TestFleetInputPrioritized: on-demand choices ordered by NodeOverlay prices launch with the prioritized
// strategy, each override's priority its position; without Prioritized on-demand stays lowest-price.
func TestFleetInputPrioritized(t *testing.T) {
	for _, prioritized := range []bool{false, true} {
		in, err := FleetInput(FleetRequest{
			CapacityType:    cloudprovider.CapacityTypeOnDemand,
			Prioritized:     prioritized,
			Choices:         []Choice{{InstanceType: "m5.large", SubnetID: "subnet-a"}, {InstanceType: "c5.large", SubnetID: "subnet-a"}},
			LaunchTemplates: map[string]string{"m5.large": "lt", "c5.large": "lt"},
		})
		if err != nil {
			t.Fatal(err)
		}
		want, wantPrio := ec2types.FleetOnDemandAllocationStrategyLowestPrice, []string(nil)
		if prioritized {
			want, wantPrio = ec2types.FleetOnDemandAllocationStrategyPrioritized, []string{"m5.large=0", "c5.large=1"}
		}
		if in.OnDemandOptions == nil || in.OnDemandOptions.AllocationStrategy != want {
			t.Errorf("prioritized=%v: on-demand options %+v, want %s", prioritized, in.OnDemandOptions, want)
		}
		var prio []string
		for _, o := range in.LaunchTemplateConfigs[0].Overrides {
			if o.Priority != nil {
				prio = append(prio, fmt.Sprintf("%s=%g", o.InstanceType, *o.Priority))
			}
		}
		if d := cmp.Diff(wantPrio, prio); d != "" {
			t.Errorf("prioritized=%v: priorities (-want +got):\n%s", prioritized, d)
		}
	}
}

func TestParseProviderID(t *testing.T) {
	cases := map[string]string{
		"aws:///us-west-2a/i-0123": "i-0123",
		"aws:///i-0123":            "i-0123",
		"gce://x/y":                "",
		"aws:///us-west-2a/":       "",
	}
	for in, want := range cases {
		got, err := ParseProviderID(in)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("ParseProviderID(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
