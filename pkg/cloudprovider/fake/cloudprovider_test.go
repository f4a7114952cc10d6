package fake

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

func claim(reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{}
	nc.Name = "nc"
	nc.Spec.Requirements = reqs
	return nc
}

func TestCreate(t *testing.T) {
	req := karpv1.NewRequirement
	tests := []struct {
		name       string
		nc         *karpv1.NodeClaim
		setup      func(f *CloudProvider)
		wantType   string
		wantZone   string
		wantCap    string
		wantICE    bool
		wantErrMsg string
	}{
		{name: "cheapest offering", nc: claim(), wantType: "fake-small", wantZone: "test-zone-a", wantCap: "spot"},
		{name: "zone and capacity type", nc: claim(req(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "test-zone-c"),
			req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand")), wantType: "fake-small", wantZone: "test-zone-c", wantCap: "on-demand"},
		{name: "requests pick a larger type", nc: func() *karpv1.NodeClaim {
			nc := claim()
			nc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
			return nc
		}(), wantType: "fake-arm-large", wantZone: "test-zone-a", wantCap: "spot"},
		{name: "unknown keys do not constrain", nc: claim(req(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "default"),
			req("team", corev1.NodeSelectorOpIn, "a")), wantType: "fake-small", wantZone: "test-zone-a", wantCap: "spot"},
		{name: "unavailable offering skipped", nc: claim(req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "fake-small")),
			setup:    func(f *CloudProvider) { f.SetUnavailable("fake-small", "test-zone-a", "spot", true) },
			wantType: "fake-small", wantZone: "test-zone-b", wantCap: "spot"},
		{name: "all offerings out of capacity", nc: claim(req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "fake-small"),
			req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot")),
			setup: func(f *CloudProvider) {
				for _, z := range Zones {
					f.SetUnavailable("fake-small", z, "spot", true)
				}
			}, wantICE: true},
		{name: "nothing compatible", nc: claim(req(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large")), wantICE: true},
		{name: "injected error", nc: claim(), setup: func(f *CloudProvider) { f.InjectError("Create", errors.New("boom")) }, wantErrMsg: "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New(clocktesting.NewFakeClock(time.Unix(0, 0)))
			if tt.setup != nil {
				tt.setup(f)
			}
			got, err := f.Create(context.Background(), tt.nc)
			switch {
			case tt.wantICE:
				if !cloudprovider.IsInsufficientCapacity(err) {
					t.Fatalf("err = %v, want insufficient capacity", err)
				}
				return
			case tt.wantErrMsg != "":
				if err == nil || err.Error() != tt.wantErrMsg {
					t.Fatalf("err = %v, want %q", err, tt.wantErrMsg)
				}
				return
			case err != nil:
				t.Fatalf("Create: %v", err)
			}
			gotSel := [3]string{got.Labels[corev1.LabelInstanceTypeStable], got.Labels[corev1.LabelTopologyZone], got.Labels[karpv1.CapacityTypeLabelKey]}
			if diff := cmp.Diff([3]string{tt.wantType, tt.wantZone, tt.wantCap}, gotSel); diff != "" {
				t.Errorf("launched (-want +got):\n%s", diff)
			}
			if zone, err := ZoneFromProviderID(got.Status.ProviderID); err != nil || zone != tt.wantZone {
				t.Errorf("provider ID %q zone %q err %v", got.Status.ProviderID, zone, err)
			}
		})
	}
}

func TestInstanceLifecycle(t *testing.T) {
	ctx := context.Background()
	f := New(clocktesting.NewFakeClock(time.Unix(0, 0)))
	nc, err := f.Create(ctx, claim())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Get(ctx, nc.Status.ProviderID); err != nil {
		t.Fatalf("Get: %v", err)
	}
	list, _ := f.List(ctx)
	if len(list) != 1 {
		t.Fatalf("List = %d instances", len(list))
	}
	if err := f.Delete(ctx, nc); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := f.Delete(ctx, nc); !cloudprovider.IsNotFound(err) {
		t.Errorf("second Delete = %v, want not found", err)
	}
	if _, err := f.Get(ctx, nc.Status.ProviderID); !cloudprovider.IsNotFound(err) {
		t.Errorf("Get after Delete = %v, want not found", err)
	}
	if diff := cmp.Diff([]string{nc.Status.ProviderID}, f.Deleted()); diff != "" {
		t.Errorf("Deleted (-want +got):\n%s", diff)
	}
	if len(f.Created()) != 1 {
		t.Errorf("Created = %d", len(f.Created()))
	}
}
