package aws

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
)

func TestNodeLabels(t *testing.T) {
	claim := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
			karpv1.NodePoolLabelKey:            "default",
			"team":                             "a",
			"node-restriction.kubernetes.io/x": "y",
			"example.k8s.io/z":                 "w",
			corev1.LabelHostname:               "h",
		}},
		Spec: karpv1.NodeClaimSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
			karpv1.NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64"),
			karpv1.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large", "c5.large"),
			karpv1.NewRequirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot", "on-demand"),
		}},
	}
	want := map[string]string{
		karpv1.NodePoolLabelKey:     "default",
		"team":                      "a",
		corev1.LabelArchStable:      "amd64",
		karpv1.CapacityTypeLabelKey: "spot",
	}
	if d := cmp.Diff(want, NodeLabels(claim, "spot")); d != "" {
		t.Errorf("labels (-want +got):\n%s", d)
	}
}

func TestClusterDNS(t *testing.T) {
	for cidr, want := range map[string]string{"10.100.0.0/16": "10.100.0.10", "172.20.0.0/16": "172.20.0.10", "10.0.0.0/29": ""} {
		got, err := ClusterDNS(cidr)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("ClusterDNS(%s) = %q, %v; want %q", cidr, got, err, want)
		}
	}
}

func TestDrift(t *testing.T) {
	nc := &awsv1.EC2NodeClass{Status: awsv1.EC2NodeClassStatus{
		AMIs:                 []awsv1.AMI{{ID: "ami-1"}},
		Subnets:              []awsv1.Subnet{{ID: "subnet-1"}},
		SecurityGroups:       []awsv1.SecurityGroup{{ID: "sg-2"}, {ID: "sg-1"}},
		CapacityReservations: []awsv1.CapacityReservation{{ID: "cr-1"}},
	}}
	cases := []struct {
		name string
		inst instance.Instance
		want cloudprovider.DriftReason
	}{
		{"matching", instance.Instance{ImageID: "ami-1", SubnetID: "subnet-1", SecurityGroupIDs: []string{"sg-1", "sg-2"}}, ""},
		{"ami", instance.Instance{ImageID: "ami-0", SubnetID: "subnet-1"}, karpv1.ReasonAMIDrift},
		{"subnet", instance.Instance{ImageID: "ami-1", SubnetID: "subnet-9"}, karpv1.ReasonSubnetDrift},
		{"security groups", instance.Instance{ImageID: "ami-1", SubnetID: "subnet-1", SecurityGroupIDs: []string{"sg-1"}}, karpv1.ReasonSecurityGroupDrift},
		{"security groups before subnet", instance.Instance{ImageID: "ami-1", SubnetID: "subnet-9", SecurityGroupIDs: []string{"sg-1"}}, karpv1.ReasonSecurityGroupDrift},
		{"reservation no longer selected", instance.Instance{ImageID: "ami-1", SubnetID: "subnet-1", CapacityReservationID: "cr-9"}, karpv1.ReasonCapacityReservationDrift},
		{"reservation still selected", instance.Instance{ImageID: "ami-1", SubnetID: "subnet-1", CapacityReservationID: "cr-1"}, ""},
		{"unknown groups are not drift", instance.Instance{ImageID: "ami-1", SubnetID: "subnet-1"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Drift(nc, &tc.inst); got != tc.want {
				t.Errorf("Drift = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFitting(t *testing.T) {
	small := &cloudprovider.InstanceType{Name: "small", Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")}}
	big := &cloudprovider.InstanceType{Name: "big", Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi")}}
	gpu := &cloudprovider.InstanceType{Name: "gpu", Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), "nvidia.com/gpu": resource.MustParse("1")}}
	got := fitting([]*cloudprovider.InstanceType{small, big, gpu}, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")})
	if len(got) != 2 || got[0].Name != "big" || got[1].Name != "gpu" {
		t.Errorf("fitting cpu=3 kept %v, want big and gpu", got)
	}
	got = fitting([]*cloudprovider.InstanceType{small, big, gpu}, corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")})
	if len(got) != 1 || got[0].Name != "gpu" {
		t.Errorf("fitting gpu=1 kept %v, want only gpu", got)
	}
}

func TestNodeClassHash(t *testing.T) {
	base := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{
		SubnetSelectorTerms: []awsv1.SubnetSelectorTerm{{ID: "subnet-1"}},
		Tags:                map[string]string{"a": "1"},
	}}
	selectorsChanged := base.DeepCopy()
	selectorsChanged.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: "subnet-2"}}
	tagsChanged := base.DeepCopy()
	tagsChanged.Spec.Tags["a"] = "2"
	userData := "x"
	userDataChanged := base.DeepCopy()
	userDataChanged.Spec.UserData = &userData
	if NodeClassHash(base) != NodeClassHash(selectorsChanged) {
		t.Errorf("selector terms changed the hash; they are compared through status")
	}
	if NodeClassHash(base) == NodeClassHash(tagsChanged) || NodeClassHash(base) == NodeClassHash(userDataChanged) {
		t.Errorf("tags or user data did not change the hash")
	}
}
