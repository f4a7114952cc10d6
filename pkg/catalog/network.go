package catalog

import "slices"

// efaInterfaces is the number of Elastic Fabric Adapter interfaces an instance type takes, for the EFA-capable
// types the simulator models (from the EC2 documentation of each type's network cards, 2026-11). Types not listed
// take none. It is the one table of EFA interfaces: the DRA device model (pkg/dra/devices) reads it too.
var efaInterfaces = map[string]int{
	"c5n.18xlarge": 1, "c5n.metal": 1, "c6gn.16xlarge": 1, "c6i.32xlarge": 1, "c6in.32xlarge": 2, "c7gn.16xlarge": 1,
	"c7i.48xlarge": 1, "hpc6a.48xlarge": 1, "hpc7g.16xlarge": 1, "i4i.32xlarge": 1, "m5dn.24xlarge": 1,
	"m5n.24xlarge": 1, "m6i.32xlarge": 1, "m7i.48xlarge": 1, "r5n.24xlarge": 1, "r6i.32xlarge": 1,
	"g4dn.8xlarge": 1, "g4dn.12xlarge": 1, "g4dn.16xlarge": 1, "g4dn.metal": 1,
	"g5.8xlarge": 1, "g5.12xlarge": 1, "g5.16xlarge": 1, "g5.24xlarge": 1, "g5.48xlarge": 1,
	"g6.8xlarge": 1, "g6.12xlarge": 1, "g6.16xlarge": 1, "g6.24xlarge": 1, "g6.48xlarge": 1,
	"g6e.8xlarge": 1, "g6e.12xlarge": 1, "g6e.16xlarge": 1, "g6e.24xlarge": 2, "g6e.48xlarge": 4,
	"gr6.8xlarge": 1, "p3dn.24xlarge": 1, "p4d.24xlarge": 4, "p4de.24xlarge": 4,
	"p5.4xlarge": 1, "p5.48xlarge": 32, "p5e.48xlarge": 32, "p5en.48xlarge": 16,
	"p6-b200.48xlarge": 8, "p6-b300.48xlarge": 16,
	"trn1.32xlarge": 8, "trn1n.32xlarge": 16,
}

// nestedVirtualizationFamilies are the families EC2 offers nested virtualization on.
var nestedVirtualizationFamilies = []string{"c8i", "m8i", "r8i"}

// EFAInterfaces returns how many EFA interfaces the type takes (0: no EFA).
func (t *InstanceType) EFAInterfaces() int { return efaInterfaces[t.Name] }

// NetworkCards returns, per network card, how many network interfaces it takes: EFA types have one card per EFA
// interface sharing the type's interfaces, the others a single card.
func (t *InstanceType) NetworkCards() []int {
	n := max(t.EFAInterfaces(), 1)
	per := max(t.MaxENIs/n, 1)
	out := make([]int, n)
	for i := range out {
		out[i] = per
	}
	out[0] = max(t.MaxENIs-per*(n-1), 1)
	return out
}

// PlacementStrategies returns the placement group strategies the type launches in: burstable types are not
// placed in cluster groups.
func (t *InstanceType) PlacementStrategies() []string {
	if t.Burstable {
		return []string{"partition", "spread"}
	}
	return []string{"cluster", "partition", "spread"}
}

// NestedVirtualization reports whether the type supports nested virtualization.
func (t *InstanceType) NestedVirtualization() bool {
	return slices.Contains(nestedVirtualizationFamilies, t.Family)
}
