package provisioning

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/pkg/settings"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestNoCompatibleInstanceTypes(t *testing.T) {
	its := []*cloudprovider.InstanceType{
		{Name: "m5.large", Labels: map[string]string{corev1.LabelArchStable: "amd64", "karpenter.k8s.aws/instance-family": "m5"},
			Offerings: []cloudprovider.Offering{{Zone: "zone-a", CapacityType: karpv1.CapacityTypeSpot}}},
		{Name: "c5.large", Labels: map[string]string{corev1.LabelArchStable: "amd64", "karpenter.k8s.aws/instance-family": "c5"},
			Offerings: []cloudprovider.Offering{{Zone: "zone-b", CapacityType: karpv1.CapacityTypeOnDemand}}},
	}
	two := 2
	three := 3
	minValues := func(n *int) *karpv1.NodePool {
		np := test.NodePool("default").Requirement("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpExists).Obj()
		np.Spec.Template.Spec.Requirements[len(np.Spec.Template.Spec.Requirements)-1].MinValues = n
		return np
	}
	tests := []struct {
		name   string
		np     *karpv1.NodePool
		policy string
		want   bool
	}{
		{name: "compatible", np: test.NodePool("default").Obj()},
		{name: "own labels are not held against types", np: test.NodePool("default").Requirement("team", corev1.NodeSelectorOpIn, "a").Obj()},
		{name: "no type of the architecture", np: test.NodePool("default").Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64").Obj(), want: true},
		{name: "no offering in the zone", np: test.NodePool("default").Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "zone-c").Obj(), want: true},
		{name: "type and capacity type apart", np: test.NodePool("default").Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large").
			Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).Obj(), want: true},
		{name: "minValues met", np: minValues(&two), policy: settings.MinValuesPolicyStrict},
		{name: "minValues not met", np: minValues(&three), policy: settings.MinValuesPolicyStrict, want: true},
		{name: "minValues relaxed by BestEffort", np: minValues(&three), policy: settings.MinValuesPolicyBestEffort},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := noCompatibleInstanceTypes(tt.np, its, tt.policy); (got != "") != tt.want {
				t.Errorf("noCompatibleInstanceTypes = %q, want a reason: %v", got, tt.want)
			}
		})
	}
}

func TestAnnounceNoCompatible(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC))
	rec := test.NewRecorder()
	c := &Controller{deps: deps.Deps{Clock: clk, Recorder: rec, Settings: &settings.Settings{MinValuesPolicy: settings.MinValuesPolicyStrict}},
		noCompatible: noCompatibleSeen{}}
	np := test.NodePool("arm").Requirement(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64").Obj()
	np.UID = "uid-arm"
	pools := []solver.NodePoolOption{{NodePool: np, InstanceTypes: []*cloudprovider.InstanceType{{Name: "m5.large",
		Labels: map[string]string{corev1.LabelArchStable: "amd64"}, Offerings: []cloudprovider.Offering{{Zone: "zone-a", CapacityType: karpv1.CapacityTypeSpot}}}}}}
	c.announceNoCompatible(pools)
	c.announceNoCompatible(pools)
	got := rec.Events()
	if len(got) != 1 || got[0].Kind != "NodePool" || got[0].Name != "arm" || got[0].Type != corev1.EventTypeWarning || got[0].Reason != "NoCompatibleInstanceTypes" {
		t.Fatalf("events %+v, want one Warning NoCompatibleInstanceTypes on nodepool arm", got)
	}
	clk.Step(NoCompatibleRepeat)
	c.announceNoCompatible(pools)
	if n := len(rec.Events()); n != 2 {
		t.Errorf("after %s: %d events, want the event repeated", NoCompatibleRepeat, n)
	}
}
