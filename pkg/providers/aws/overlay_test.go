package aws_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail/dovetail/pkg/overlay"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestCreateWithOverlays: c5.large is the cloud's cheaper on-demand type; an overlay taking 90% off m5 and adding
// example.com/device makes Create launch m5.large (prioritized in overlaid price order) with the device in the
// NodeClaim's capacity and allocatable.
func TestCreateWithOverlays(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	p.resolvedNodeClass(t)
	store := overlay.NewStore()
	p.SetInstanceTypeOverlay(store)
	o := karpv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: "m5"}}
	o.Spec.Requirements = []karpv1alpha1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5"}}}
	o.Spec.PriceAdjustment = ptr.To("-90%")
	o.Spec.Capacity = corev1.ResourceList{"example.com/device": resource.MustParse("1")}
	nc := test.NodeClaim("default-overlay", "default").
		Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large", "c5.large").
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand").Obj()

	if _, err := p.Create(context.Background(), nc); err == nil {
		t.Fatal("Create before the overlays were evaluated succeeded")
	}
	store.Set([]karpv1alpha1.NodeOverlay{o})
	created, err := p.Create(context.Background(), nc)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if got := created.Labels[corev1.LabelInstanceTypeStable]; got != "m5.large" {
		t.Errorf("launched %s, want m5.large (cheaper through the overlay)", got)
	}
	one := resource.MustParse("1")
	if q := created.Status.Capacity["example.com/device"]; q.Cmp(one) != 0 {
		t.Errorf("capacity of example.com/device = %s, want 1", q.String())
	}
	if q := created.Status.Allocatable["example.com/device"]; q.Cmp(one) != 0 {
		t.Errorf("allocatable of example.com/device = %s, want 1", q.String())
	}
}
