package catalog

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNetworkFeatures(t *testing.T) {
	cases := []struct {
		t          InstanceType
		efa        int
		cards      []int
		strategies []string
		nested     bool
	}{
		{InstanceType{Name: "m5.large", Family: "m5", MaxENIs: 3}, 0, []int{3}, []string{"cluster", "partition", "spread"}, false},
		{InstanceType{Name: "t3.large", Family: "t3", MaxENIs: 3, Burstable: true}, 0, []int{3}, []string{"partition", "spread"}, false},
		{InstanceType{Name: "p4d.24xlarge", Family: "p4d", MaxENIs: 60}, 4, []int{15, 15, 15, 15}, []string{"cluster", "partition", "spread"}, false},
		{InstanceType{Name: "c6in.32xlarge", Family: "c6in", MaxENIs: 15}, 2, []int{8, 7}, []string{"cluster", "partition", "spread"}, false},
		{InstanceType{Name: "m8i.large", Family: "m8i", MaxENIs: 3}, 0, []int{3}, []string{"cluster", "partition", "spread"}, true},
	}
	for _, c := range cases {
		got := struct {
			EFA        int
			Cards      []int
			Strategies []string
			Nested     bool
		}{c.t.EFAInterfaces(), c.t.NetworkCards(), c.t.PlacementStrategies(), c.t.NestedVirtualization()}
		want := struct {
			EFA        int
			Cards      []int
			Strategies []string
			Nested     bool
		}{c.efa, c.cards, c.strategies, c.nested}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.t.Name, d)
		}
	}
}
