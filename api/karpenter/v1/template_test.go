package v1_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

func TestToNodeClaimCopies(t *testing.T) {
	tmpl := &karpv1.NodeClaimTemplate{
		ObjectMeta: karpv1.ObjectMeta{Labels: map[string]string{"team": "a"}},
		Spec: karpv1.NodeClaimTemplateSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{karpv1.NewRequirement("kubernetes.io/arch", corev1.NodeSelectorOpIn, "amd64")},
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
			ExpireAfter:  karpv1.MustParseNillableDuration("24h"),
		},
	}
	nc := tmpl.ToNodeClaim()
	if diff := cmp.Diff(tmpl.Spec.Requirements, nc.Spec.Requirements); diff != "" {
		t.Errorf("requirements (-template +nodeclaim):\n%s", diff)
	}
	if nc.Spec.ExpireAfter.String() != "24h0m0s" || nc.Labels["team"] != "a" {
		t.Errorf("expireAfter %s labels %v not copied", nc.Spec.ExpireAfter, nc.Labels)
	}
	nc.Labels["team"] = "b"
	nc.Spec.Requirements[0].Values[0] = "arm64"
	nc.Spec.NodeClassRef.Name = "changed"
	if tmpl.Labels["team"] != "a" || tmpl.Spec.Requirements[0].Values[0] != "amd64" || tmpl.Spec.NodeClassRef.Name != "default" {
		t.Errorf("changing the NodeClaim changed the template: %+v", tmpl)
	}
}

func TestLimitsExceededBy(t *testing.T) {
	limits := karpv1.Limits{corev1.ResourceCPU: resource.MustParse("10"), corev1.ResourceMemory: resource.MustParse("10Gi")}
	cases := []struct {
		name  string
		usage corev1.ResourceList
		want  string
	}{
		{name: "within", usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")}},
		{name: "unlimited resource", usage: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("100")}},
		{name: "cpu over", usage: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10500m")}, want: "cpu usage 10500m exceeds"},
		{name: "memory over", usage: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("11Gi")}, want: "memory usage 11Gi exceeds"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := limits.ExceededBy(tc.usage)
			if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("ExceededBy = %v, want %q", err, tc.want)
			}
		})
	}
}
