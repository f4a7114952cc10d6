package solver

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/hashversion"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestBuildNodeClaim(t *testing.T) {
	np := test.NodePool("web").Label("team", "a").Taint("dedicated", "web", corev1.TaintEffectNoSchedule).
		StartupTaint("cilium", "", corev1.TaintEffectNoExecute).ExpireAfter("24h").Obj()
	np.UID = "np-uid"
	np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
	reqs := []karpv1.NodeSelectorRequirementWithMinValues{karpv1.NewRequirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")}
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	nc := BuildNodeClaim(NewNodeClaim{NodePool: np, Requirements: reqs, Requests: requests})

	if nc.GenerateName != "web-" || nc.Name != "" {
		t.Errorf("name %q generateName %q", nc.Name, nc.GenerateName)
	}
	if diff := cmp.Diff(map[string]string{"team": "a", karpv1.NodePoolLabelKey: "web", "karpenter.k8s.aws/ec2nodeclass": "default"}, nc.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{karpv1.NodePoolHashAnnotationKey: hashversion.NodePool(np), karpv1.NodePoolHashVersionAnnotationKey: hashversion.NodePoolVersion}, nc.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if len(nc.OwnerReferences) != 1 || nc.OwnerReferences[0].UID != "np-uid" || nc.OwnerReferences[0].Kind != "NodePool" {
		t.Errorf("owner references %v", nc.OwnerReferences)
	}
	if diff := cmp.Diff([]string{karpv1.TerminationFinalizer}, nc.Finalizers); diff != "" {
		t.Errorf("finalizers (-want +got):\n%s", diff)
	}
	want := karpv1.NodeClaimSpec{
		Taints:                 np.Spec.Template.Spec.Taints,
		StartupTaints:          np.Spec.Template.Spec.StartupTaints,
		Requirements:           reqs,
		Resources:              karpv1.ResourceRequirements{Requests: requests},
		NodeClassRef:           np.Spec.Template.Spec.NodeClassRef,
		ExpireAfter:            np.Spec.Template.Spec.ExpireAfter,
		TerminationGracePeriod: &metav1.Duration{Duration: time.Hour},
	}
	if diff := cmp.Diff(want, nc.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
}

func TestBuildNodeClaimAnnotations(t *testing.T) {
	np := test.NodePool("web").Obj()
	two, three := 2, 3
	typ := func(name, family string, o ...cloudprovider.Offering) *cloudprovider.InstanceType {
		return &cloudprovider.InstanceType{Name: name, Labels: map[string]string{"karpenter.k8s.aws/instance-family": family}, Offerings: o}
	}
	spot := cloudprovider.Offering{Zone: "zone-a", CapacityType: karpv1.CapacityTypeSpot}
	overlaid := cloudprovider.Offering{Zone: "zone-a", CapacityType: karpv1.CapacityTypeSpot, PriceOverlay: "cheaper"}
	withCapacity := typ("m5.xlarge", "m5", spot)
	withCapacity.CapacityOverlays = map[corev1.ResourceName]string{"example.com/device": "devices"}
	family := func(min *int) []karpv1.NodeSelectorRequirementWithMinValues {
		r := karpv1.NewRequirement("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpExists)
		r.MinValues = min
		return []karpv1.NodeSelectorRequirementWithMinValues{r}
	}
	tests := []struct {
		name string
		nn   NewNodeClaim
		want map[string]string
	}{
		{name: "minValues met", nn: NewNodeClaim{NodePool: np, Requirements: family(&two),
			InstanceTypes: []*cloudprovider.InstanceType{typ("m5.large", "m5", spot), typ("c5.large", "c5", spot)}},
			want: map[string]string{karpv1.NodeClaimMinValuesRelaxedAnnotationKey: "false"}},
		{name: "minValues relaxed", nn: NewNodeClaim{NodePool: np, Requirements: family(&three),
			InstanceTypes: []*cloudprovider.InstanceType{typ("m5.large", "m5", spot), typ("c5.large", "c5", spot)}},
			want: map[string]string{karpv1.NodeClaimMinValuesRelaxedAnnotationKey: "true"}},
		{name: "overlays applied", nn: NewNodeClaim{NodePool: np,
			InstanceTypes: []*cloudprovider.InstanceType{typ("m5.large", "m5", overlaid), withCapacity}},
			want: map[string]string{karpv1.NodeClaimMinValuesRelaxedAnnotationKey: "false",
				karpv1.PriceOverlayAppliedAnnotationKey: "true", karpv1.CapacityOverlayAppliedAnnotationKey: "true"}},
		{name: "static nodeclaim: no instance types planned", nn: NewNodeClaim{NodePool: np}, want: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BuildNodeClaim(tt.nn).Annotations
			delete(got, karpv1.NodePoolHashAnnotationKey)
			delete(got, karpv1.NodePoolHashVersionAnnotationKey)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}
