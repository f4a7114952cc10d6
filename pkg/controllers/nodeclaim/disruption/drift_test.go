package disruption

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/hashversion"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestHashDrift(t *testing.T) {
	tests := []struct {
		name string
		nc   *karpv1.NodeClaim
		np   *karpv1.NodePool
		want drift
	}{
		{
			name: "same hash",
			nc:   test.NodeClaim("a", "default").NodePoolHash("123", hashversion.NodePoolVersion).Obj(),
			np:   test.NodePool("default").NodePoolHash("123", hashversion.NodePoolVersion).Obj(),
		},
		{
			name: "template changed",
			nc:   test.NodeClaim("a", "default").NodePoolHash("123", hashversion.NodePoolVersion).Obj(),
			np:   test.NodePool("default").NodePoolHash("456", hashversion.NodePoolVersion).Obj(),
			want: drift{Reason: karpv1.ReasonNodePoolDrifted,
				Message: "nodepool hash 123 != 456: the template of nodepool default changed after the node was launched"},
		},
		{
			name: "hash versions differ: not comparable",
			nc:   test.NodeClaim("a", "default").NodePoolHash("123", "old-scheme").Obj(),
			np:   test.NodePool("default").NodePoolHash("456", hashversion.NodePoolVersion).Obj(),
		},
		{
			name: "nodeclaim without hash",
			nc:   test.NodeClaim("a", "default").Obj(),
			np:   test.NodePool("default").NodePoolHash("456", hashversion.NodePoolVersion).Obj(),
		},
		{
			name: "nodepool not hashed yet",
			nc:   test.NodeClaim("a", "default").NodePoolHash("123", hashversion.NodePoolVersion).Obj(),
			np:   test.NodePool("default").Obj(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, hashDrift(tt.nc, tt.np)); diff != "" {
				t.Errorf("hashDrift (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequirementsDrift(t *testing.T) {
	const zone, arch, it = corev1.LabelTopologyZone, corev1.LabelArchStable, corev1.LabelInstanceTypeStable
	launched := test.NodeClaim("a", "default").
		Label(zone, "zone-a").Label(it, "m.large").Label(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeSpot).Label("cpu", "4").Obj()
	kubeletNode := test.Node("n", "fake:///zone-a/i-1").Label(arch, karpv1.ArchitectureArm64).Label(zone, "zone-b").Obj()
	tests := []struct {
		name string
		np   *karpv1.NodePool
		node *corev1.Node
		want drift
	}{
		{name: "no requirements", np: test.NodePool("default").Obj()},
		{name: "zone still allowed", np: test.NodePool("default").Requirement(zone, corev1.NodeSelectorOpIn, "zone-a", "zone-b").Obj()},
		{
			name: "zone no longer allowed",
			np:   test.NodePool("default").Requirement(zone, corev1.NodeSelectorOpIn, "zone-b", "zone-c").Obj(),
			want: drift{Reason: karpv1.ReasonRequirementsDrifted,
				Message: "label topology.kubernetes.io/zone=zone-a no longer allowed by nodepool requirements (topology.kubernetes.io/zone In [zone-b, zone-c])"},
		},
		{
			name: "capacity type excluded",
			np:   test.NodePool("default").Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpNotIn, karpv1.CapacityTypeSpot).Obj(),
			want: drift{Reason: karpv1.ReasonRequirementsDrifted,
				Message: "label karpenter.sh/capacity-type=spot no longer allowed by nodepool requirements (karpenter.sh/capacity-type NotIn [spot])"},
		},
		{
			name: "first violated requirement in nodepool order",
			np: test.NodePool("default").Requirement(zone, corev1.NodeSelectorOpIn, "zone-a").
				Requirement(it, corev1.NodeSelectorOpIn, "m.xlarge").Requirement(zone, corev1.NodeSelectorOpIn, "zone-c").Obj(),
			want: drift{Reason: karpv1.ReasonRequirementsDrifted,
				Message: "label node.kubernetes.io/instance-type=m.large no longer allowed by nodepool requirements (node.kubernetes.io/instance-type In [m.xlarge])"},
		},
		{name: "Gt satisfied", np: test.NodePool("default").Requirement("cpu", corev1.NodeSelectorOpGt, "2").Obj()},
		{
			name: "Lt violated",
			np:   test.NodePool("default").Requirement("cpu", corev1.NodeSelectorOpLt, "4").Obj(),
			want: drift{Reason: karpv1.ReasonRequirementsDrifted,
				Message: "label cpu=4 no longer allowed by nodepool requirements (cpu Lt [4])"},
		},
		{name: "Exists satisfied", np: test.NodePool("default").Requirement(it, corev1.NodeSelectorOpExists).Obj()},
		{
			name: "DoesNotExist on a present label",
			np:   test.NodePool("default").Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpDoesNotExist).Obj(),
			want: drift{Reason: karpv1.ReasonRequirementsDrifted,
				Message: "label karpenter.sh/capacity-type=spot no longer allowed by nodepool requirements (karpenter.sh/capacity-type DoesNotExist)"},
		},
		{name: "label the node lacks is not drift", np: test.NodePool("default").Requirement("team", corev1.NodeSelectorOpIn, "a").Obj()},
		{
			name: "node label completes the nodeclaim's",
			np:   test.NodePool("default").Requirement(arch, corev1.NodeSelectorOpIn, karpv1.ArchitectureAmd64).Obj(),
			node: kubeletNode,
			want: drift{Reason: karpv1.ReasonRequirementsDrifted,
				Message: "label kubernetes.io/arch=arm64 no longer allowed by nodepool requirements (kubernetes.io/arch In [amd64])"},
		},
		{
			name: "nodeclaim label wins over the node's",
			np:   test.NodePool("default").Requirement(zone, corev1.NodeSelectorOpIn, "zone-a").Obj(),
			node: kubeletNode,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, requirementsDrift(nodeLabels(launched, tt.node), tt.np)); diff != "" {
				t.Errorf("requirementsDrift (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInstanceTypeDrift(t *testing.T) {
	its := []*cloudprovider.InstanceType{{Name: "m5.large", Offerings: []cloudprovider.Offering{
		{Zone: "zone-a", CapacityType: karpv1.CapacityTypeSpot},
		{Zone: "zone-b", CapacityType: karpv1.CapacityTypeOnDemand},
	}}}
	claim := func(typ, zone, capacityType string) *karpv1.NodeClaim {
		return test.NodeClaim("a", "default").Label(corev1.LabelInstanceTypeStable, typ).
			Label(corev1.LabelTopologyZone, zone).Label(karpv1.CapacityTypeLabelKey, capacityType).Obj()
	}
	tests := []struct {
		name string
		nc   *karpv1.NodeClaim
		want string
	}{
		{name: "offered", nc: claim("m5.large", "zone-a", karpv1.CapacityTypeSpot)},
		{name: "type gone", nc: claim("m4.large", "zone-a", karpv1.CapacityTypeSpot), want: karpv1.ReasonInstanceTypeNotFound},
		{name: "no offering in the zone", nc: claim("m5.large", "zone-c", karpv1.CapacityTypeSpot), want: karpv1.ReasonInstanceTypeNotFound},
		{name: "no offering of the capacity type", nc: claim("m5.large", "zone-a", karpv1.CapacityTypeOnDemand), want: karpv1.ReasonInstanceTypeNotFound},
		{name: "reserved falls back to on-demand", nc: claim("m5.large", "zone-b", karpv1.CapacityTypeReserved)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := instanceTypeDrift(tt.nc, its).Reason; got != tt.want {
				t.Errorf("instanceTypeDrift reason = %q, want %q", got, tt.want)
			}
		})
	}
}

// countingTypes counts GetInstanceTypes calls.
type countingTypes struct {
	*fake.CloudProvider
	calls int
}

func (c *countingTypes) GetInstanceTypes(ctx context.Context, np *karpv1.NodePool) ([]*cloudprovider.InstanceType, error) {
	c.calls++
	return c.CloudProvider.GetInstanceTypes(ctx, np)
}

// TestInstanceTypesListedOncePerPool: the drift checks of a NodePool's NodeClaims share one listing of its
// instance types for instanceTypesMaxAge, listed anew when the NodePool changes or the listing is that old.
func TestInstanceTypesListedOncePerPool(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	cp := &countingTypes{CloudProvider: fake.New(clk)}
	d := deps.Deps{CloudProvider: cp, Clock: clk}
	m := &typesMemo{}
	ctx := context.Background()
	np := test.NodePool("default").Obj()
	np.UID, np.ResourceVersion = "uid-1", "10"
	other := test.NodePool("other").Obj()
	other.UID, other.ResourceVersion = "uid-2", "11"
	steps := []struct {
		name      string
		pool      *karpv1.NodePool
		advance   time.Duration
		wantCalls int
	}{
		{name: "first check lists", pool: np, wantCalls: 1},
		{name: "5,000 more checks of the pool share it", pool: np, wantCalls: 1},
		{name: "another pool lists its own", pool: other, wantCalls: 2},
		{name: "just before the listing is too old", pool: np, advance: instanceTypesMaxAge - time.Second, wantCalls: 2},
		{name: "too old: listed again", pool: np, advance: time.Second, wantCalls: 3},
	}
	for _, s := range steps {
		clk.Step(s.advance)
		n := 1
		if strings.HasPrefix(s.name, "5,000") {
			n = 5000
		}
		for range n {
			if _, err := m.get(ctx, d, s.pool); err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
		}
		if cp.calls != s.wantCalls {
			t.Fatalf("%s: %d listings, want %d", s.name, cp.calls, s.wantCalls)
		}
	}
	changed := np.DeepCopy()
	changed.ResourceVersion = "12"
	if _, err := m.get(ctx, d, changed); err != nil || cp.calls != 4 {
		t.Fatalf("after a NodePool change: %d listings (error %v), want 4", cp.calls, err)
	}
	recreated := changed.DeepCopy()
	recreated.UID = "uid-3"
	if _, err := m.get(ctx, d, recreated); err != nil || cp.calls != 5 {
		t.Fatalf("after the NodePool was recreated: %d listings (error %v), want 5", cp.calls, err)
	}
}
