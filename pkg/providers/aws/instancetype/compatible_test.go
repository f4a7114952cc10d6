package instancetype

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
)

func TestConstraintsAllows(t *testing.T) {
	plain := Info{Name: "m5.large", MaxENIs: 3, Hypervisor: "nitro"}
	efa := Info{Name: "p4d.24xlarge", MaxENIs: 60, NetworkCards: []int{15, 15, 15, 15}, MaxEFAInterfaces: 4, Hypervisor: "nitro",
		PlacementStrategies: []string{"cluster", "partition", "spread"}}
	burst := Info{Name: "t3.large", MaxENIs: 3, Hypervisor: "nitro", PlacementStrategies: []string{"partition", "spread"}}
	xen := Info{Name: "m4.large", MaxENIs: 2, Hypervisor: "xen"}
	nested := Info{Name: "m8i.large", MaxENIs: 3, Hypervisor: "nitro", NestedVirtualization: true}
	primary := awsv1.NetworkInterface{InterfaceType: awsv1.InterfaceTypeInterface}
	efaOnCard := func(card int32) awsv1.NetworkInterface {
		return awsv1.NetworkInterface{NetworkCardIndex: card, InterfaceType: awsv1.InterfaceTypeEFAOnly}
	}
	cases := []struct {
		name string
		c    Constraints
		want []string
	}{
		{"none", Constraints{}, []string{"m5.large", "p4d.24xlarge", "t3.large", "m4.large", "m8i.large"}},
		{"primary interface only", Constraints{NetworkInterfaces: []awsv1.NetworkInterface{primary}}, []string{"m5.large", "p4d.24xlarge", "t3.large", "m4.large", "m8i.large"}},
		{"efa-only on card 1", Constraints{NetworkInterfaces: []awsv1.NetworkInterface{primary, efaOnCard(1)}}, []string{"p4d.24xlarge"}},
		{"efa-only on card 0, device 1", Constraints{NetworkInterfaces: []awsv1.NetworkInterface{primary, {DeviceIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly}}}, []string{"p4d.24xlarge"}},
		{"card beyond the type", Constraints{NetworkInterfaces: []awsv1.NetworkInterface{primary, efaOnCard(4)}}, nil},
		{"cluster group", Constraints{PlacementStrategy: "cluster"}, []string{"m5.large", "p4d.24xlarge", "m4.large", "m8i.large"}},
		{"partition group", Constraints{PlacementStrategy: "partition"}, []string{"m5.large", "p4d.24xlarge", "t3.large", "m4.large", "m8i.large"}},
		{"nested virtualization", Constraints{NestedVirtualization: true}, []string{"m8i.large"}},
		{"connection tracking", Constraints{ConnectionTracking: true}, []string{"m5.large", "p4d.24xlarge", "t3.large", "m8i.large"}},
	}
	for _, tc := range cases {
		var got []string
		for _, info := range []Info{plain, efa, burst, xen, nested} {
			if tc.c.Allows(info) {
				got = append(got, info.Name)
			}
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}
}

// TestNetworkInterfacesDecideEFAAndPods: without spec.networkInterfaces a type offers every EFA it takes; with
// them, one per efa-only interface, and an efa-only interface on card 0 takes an interface from the pod formula.
func TestNetworkInterfacesDecideEFAAndPods(t *testing.T) {
	info := Info{Name: "p4d.24xlarge", Architectures: []string{"x86_64"}, VCPU: 96, MemoryMiB: 1179648, MaxENIs: 15, IPv4PerENI: 50,
		NetworkCards: []int{15, 15, 15, 15}, MaxEFAInterfaces: 4, Hypervisor: "nitro"}
	primary := awsv1.NetworkInterface{InterfaceType: awsv1.InterfaceTypeInterface}
	cases := []struct {
		name     string
		nis      []awsv1.NetworkInterface
		efa, pod int64
	}{
		{"unset", nil, 4, 15*49 + 2},
		{"efa-only on card 1", []awsv1.NetworkInterface{primary, {NetworkCardIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly}}, 1, 15*49 + 2},
		{"efa-only on card 0", []awsv1.NetworkInterface{primary, {DeviceIndex: 1, InterfaceType: awsv1.InterfaceTypeEFAOnly}}, 1, 14*49 + 2},
		{"no efa-only", []awsv1.NetworkInterface{primary}, 0, 15*49 + 2},
	}
	for _, tc := range cases {
		shape, err := Compute(info, Kubelet{}, Settings{VMMemoryOverheadPercent: 0.075, NetworkInterfaces: tc.nis})
		if err != nil {
			t.Fatal(err)
		}
		efa := shape.Capacity[ResourceEFA]
		got := []int64{efa.Value(), shape.Capacity.Pods().Value()}
		if d := cmp.Diff([]int64{tc.efa, tc.pod}, got); d != "" {
			t.Errorf("%s: [efa pods] (-want +got):\n%s", tc.name, d)
		}
		if _, has := shape.Capacity[ResourceEFA]; tc.efa == 0 && has {
			t.Errorf("%s: capacity names %s with no EFA", tc.name, ResourceEFA)
		}
	}
}
