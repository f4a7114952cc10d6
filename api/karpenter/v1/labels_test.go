package v1_test

import (
	"testing"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

func TestDefaultLabelPolicy(t *testing.T) {
	p := karpv1.DefaultLabelPolicy()
	cases := []struct {
		key          string
		requirement  bool // allowed in NodeClaim requirements
		templateOnly bool // allowed in NodePool requirements and template labels
	}{
		{key: "kubernetes.io/arch", requirement: true, templateOnly: true},
		{key: "node.kubernetes.io/instance-type", requirement: true, templateOnly: true},
		{key: "node.kubernetes.io/custom", requirement: true, templateOnly: true},
		{key: "node-restriction.kubernetes.io/team", requirement: true, templateOnly: true},
		{key: "kops.k8s.io/instancegroup", requirement: true, templateOnly: true},
		{key: "karpenter.sh/capacity-type", requirement: true, templateOnly: true},
		{key: "karpenter.sh/nodepool", requirement: true, templateOnly: false},
		{key: "example.com/team", requirement: true, templateOnly: true},
		{key: "team", requirement: true, templateOnly: true},
		{key: "notkubernetes.io/x", requirement: true, templateOnly: true},
		{key: "kubernetes.io/hostname", requirement: false, templateOnly: false},
		{key: "kubernetes.io/custom", requirement: false, templateOnly: false},
		{key: "topology.kubernetes.io/rack", requirement: false, templateOnly: false},
		{key: "foo.k8s.io/bar", requirement: false, templateOnly: false},
		{key: "karpenter.sh/registered", requirement: false, templateOnly: false},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			if err := p.ValidateRequirementKey(tc.key); (err == nil) != tc.requirement {
				t.Errorf("ValidateRequirementKey(%q) = %v, want allowed=%v", tc.key, err, tc.requirement)
			}
			if err := p.ValidateTemplateLabelKey(tc.key); (err == nil) != tc.templateOnly {
				t.Errorf("ValidateTemplateLabelKey(%q) = %v, want allowed=%v", tc.key, err, tc.templateOnly)
			}
			if err := p.ValidateNodePoolRequirementKey(tc.key); (err == nil) != tc.templateOnly {
				t.Errorf("ValidateNodePoolRequirementKey(%q) = %v, want allowed=%v", tc.key, err, tc.templateOnly)
			}
		})
	}
}

func TestLabelDomain(t *testing.T) {
	cases := map[string]string{"a.b/c": "a.b", "plain": "", "x/y/z": "x"}
	for key, want := range cases {
		if got := karpv1.LabelDomain(key); got != want {
			t.Errorf("LabelDomain(%q) = %q, want %q", key, got, want)
		}
	}
}
