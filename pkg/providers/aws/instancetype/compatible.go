package instancetype

import (
	"slices"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
)

// Constraints are the EC2NodeClass launch settings that only some instance types can launch with.
type Constraints struct {
	// NetworkInterfaces are spec.networkInterfaces: each needs its network card and device index on the type, and
	// the efa-only ones need that many EFA interfaces.
	NetworkInterfaces []awsv1.NetworkInterface
	// PlacementStrategy is the strategy of the placement group the node class selects ("" for none).
	PlacementStrategy string
	// NestedVirtualization is cpuOptions.nestedVirtualization: enabled.
	NestedVirtualization bool
	// ConnectionTracking is set when spec.connectionTracking is: only Nitro types take its timeouts.
	ConnectionTracking bool
}

// Allows reports whether info can launch with the constraints.
func (c Constraints) Allows(info Info) bool {
	if !c.networkInterfacesFit(info) {
		return false
	}
	if c.PlacementStrategy != "" && info.PlacementStrategies != nil && !slices.Contains(info.PlacementStrategies, c.PlacementStrategy) {
		return false
	}
	if c.NestedVirtualization && !info.NestedVirtualization {
		return false
	}
	if c.ConnectionTracking && info.Hypervisor != "nitro" {
		return false
	}
	return true
}

func (c Constraints) networkInterfacesFit(info Info) bool {
	if len(c.NetworkInterfaces) == 0 {
		return true
	}
	cards := info.NetworkCards
	if len(cards) == 0 {
		cards = []int{info.MaxENIs}
	}
	efaOnly := 0
	for _, ni := range c.NetworkInterfaces {
		if int(ni.NetworkCardIndex) >= len(cards) || int(ni.DeviceIndex) >= cards[ni.NetworkCardIndex] {
			return false
		}
		if ni.InterfaceType == awsv1.InterfaceTypeEFAOnly {
			efaOnly++
		}
	}
	return efaOnly <= info.MaxEFAInterfaces
}
