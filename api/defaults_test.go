package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// TestNodePoolDefaults creates a NodePool from Go types without any optional field and checks the defaults
// the API server fills in.
func TestNodePoolDefaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults"},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{karpv1.NewRequirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")},
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
		}}},
	}
	if err := kube.Create(ctx, np, client.DryRunAll); err != nil {
		t.Fatalf("creating NodePool: %v", err)
	}
	got := struct {
		ExpireAfter, ConsolidateAfter string
		Policy                        karpv1.ConsolidationPolicy
		Budgets                       []karpv1.Budget
	}{
		np.Spec.Template.Spec.ExpireAfter.String(), np.Spec.Disruption.ConsolidateAfter.String(),
		np.Spec.Disruption.ConsolidationPolicy, np.Spec.Disruption.Budgets,
	}
	want := got
	want.ExpireAfter, want.ConsolidateAfter = "720h0m0s", "0s"
	want.Policy = karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized
	want.Budgets = []karpv1.Budget{{Nodes: "10%"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

// TestNodeClaimNeverRoundTrip checks that "Never" and the user's duration text survive a round trip through
// the API server and the Go types.
func TestNodeClaimNeverRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "never-round-trip"},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{karpv1.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")},
			NodeClassRef: &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"},
			ExpireAfter:  karpv1.NeverDuration(),
			Resources:    karpv1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
		},
	}
	if err := kube.Create(ctx, nc); err != nil {
		t.Fatalf("creating NodeClaim: %v", err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.Background(), nc) })
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(karpv1.SchemeGroupVersion.WithKind("NodeClaim"))
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), u); err != nil {
		t.Fatalf("reading NodeClaim: %v", err)
	}
	if got, _, _ := unstructured.NestedString(u.Object, "spec", "expireAfter"); got != karpv1.Never {
		t.Errorf("stored expireAfter = %q, want %q", got, karpv1.Never)
	}
	var back karpv1.NodeClaim
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), &back); err != nil {
		t.Fatalf("reading NodeClaim: %v", err)
	}
	if !back.Spec.ExpireAfter.IsNever() {
		t.Errorf("expireAfter read back as %s, want Never", back.Spec.ExpireAfter)
	}
}

// TestEC2NodeClassDefaults checks the metadataOptions defaults.
func TestEC2NodeClassDefaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc := &awsv1.EC2NodeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults"},
		Spec: awsv1.EC2NodeClassSpec{
			Role:                       "NodeRole",
			AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "c"}}},
			SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "c"}}},
		},
	}
	if err := kube.Create(ctx, nc, client.DryRunAll); err != nil {
		t.Fatalf("creating EC2NodeClass: %v", err)
	}
	want := &awsv1.MetadataOptions{
		HTTPEndpoint:            ptr.To("enabled"),
		HTTPProtocolIPv6:        ptr.To("disabled"),
		HTTPPutResponseHopLimit: ptr.To[int64](1),
		HTTPTokens:              ptr.To("required"),
	}
	if diff := cmp.Diff(want, nc.Spec.MetadataOptions); diff != "" {
		t.Errorf("metadataOptions defaults (-want +got):\n%s", diff)
	}
	if got := nc.AMIFamily(); got != awsv1.AMIFamilyAL2023 {
		t.Errorf("AMIFamily() = %q, want %q", got, awsv1.AMIFamilyAL2023)
	}
}

// TestCaseCounts keeps the suite at least as large as the project requires and logs the figures.
func TestCaseCounts(t *testing.T) {
	var accepted, rejected int
	for _, cases := range [][]validationCase{nodePoolCases(), nodeClaimCases(), ec2NodeClassCases()} {
		a, r := countCases(cases)
		accepted += a
		rejected += r
	}
	t.Logf("validation cases: %d accepted, %d rejected", accepted, rejected)
	if accepted < 40 || rejected < 40 {
		t.Errorf("want at least 40 accepted and 40 rejected cases, have %d and %d", accepted, rejected)
	}
}
