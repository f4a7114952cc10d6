package v1_test

import (
	"testing"

	"k8s.io/utils/ptr"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
)

func TestAMIFamily(t *testing.T) {
	cases := []struct {
		name   string
		family *string
		terms  []awsv1.AMISelectorTerm
		want   string
	}{
		{name: "alias al2023", terms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, want: awsv1.AMIFamilyAL2023},
		{name: "alias bottlerocket", terms: []awsv1.AMISelectorTerm{{Alias: "bottlerocket@v1.20.0"}}, want: awsv1.AMIFamilyBottlerocket},
		{name: "custom with alias", family: ptr.To(awsv1.AMIFamilyCustom), terms: []awsv1.AMISelectorTerm{{Alias: "al2@latest"}}, want: awsv1.AMIFamilyCustom},
		{name: "family without alias", family: ptr.To(awsv1.AMIFamilyAL2), terms: []awsv1.AMISelectorTerm{{ID: "ami-1"}}, want: awsv1.AMIFamilyAL2},
		{name: "windows alias", terms: []awsv1.AMISelectorTerm{{Alias: "windows2022@latest"}}, want: awsv1.AMIFamilyWindows2022},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMIFamily: tc.family, AMISelectorTerms: tc.terms}}
			if got := nc.AMIFamily(); got != tc.want {
				t.Errorf("AMIFamily() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLabelPolicy(t *testing.T) {
	p := awsv1.LabelPolicy()
	allowed := []string{awsv1.LabelInstanceFamily, awsv1.LabelTopologyZoneID, awsv1.LabelNodeClass, "kubernetes.io/arch", "example.com/x"}
	for _, k := range allowed {
		if err := p.ValidateRequirementKey(k); err != nil {
			t.Errorf("ValidateRequirementKey(%q) = %v, want allowed", k, err)
		}
	}
	for _, k := range []string{"karpenter.k8s.aws/made-up", "kubernetes.io/hostname", "karpenter.sh/unknown"} {
		if err := awsv1.IsRestrictedLabel(k); err == nil {
			t.Errorf("IsRestrictedLabel(%q) = nil, want an error", k)
		}
	}
}

func TestEC2NodeClassReadiness(t *testing.T) {
	nc := &awsv1.EC2NodeClass{}
	for _, c := range nc.ReadinessConditions() {
		nc.SetTrue(c, "Resolved")
	}
	if !nc.IsTrue("Ready") {
		t.Fatalf("not Ready with all readiness conditions true: %+v", nc.Status.Conditions)
	}
	nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelectorTerm{Name: "pg"}
	nc.SetFalse(awsv1.ConditionTypePlacementGroupReady, "PlacementGroupNotFound", "placement group pg not found")
	if nc.IsTrue("Ready") {
		t.Errorf("Ready stays true while the selected placement group is missing")
	}
}
