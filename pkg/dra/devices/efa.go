package devices

import (
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
)

// EFADriver is the driver name of the dranet DRA driver, which publishes the EFA interfaces of a node.
const EFADriver = "dra.net"

// efaInterfaces is the number of EFA interfaces an instance type offers to pods, for the accelerated types the EFA
// device model covers (from the EC2 documentation of each type's network cards, 2026-11).
var efaInterfaces = map[string]int{
	"g4dn.8xlarge": 1, "g4dn.12xlarge": 1, "g4dn.16xlarge": 1, "g4dn.metal": 1,
	"g5.8xlarge": 1, "g5.12xlarge": 1, "g5.16xlarge": 1, "g5.24xlarge": 1, "g5.48xlarge": 1,
	"g6.8xlarge": 1, "g6.12xlarge": 1, "g6.16xlarge": 1, "g6.24xlarge": 1, "g6.48xlarge": 1,
	"g6e.8xlarge": 1, "g6e.12xlarge": 1, "g6e.16xlarge": 1, "g6e.24xlarge": 2, "g6e.48xlarge": 4,
	"gr6.8xlarge": 1, "p3dn.24xlarge": 1, "p4d.24xlarge": 4, "p4de.24xlarge": 4,
	"p5.4xlarge": 1, "p5.48xlarge": 32, "p5e.48xlarge": 32, "p5en.48xlarge": 16,
	"p6-b200.48xlarge": 8, "p6-b300.48xlarge": 16,
	"trn1.32xlarge": 8, "trn1n.32xlarge": 16,
}

// efaSlices returns the dranet slice with the EFA interfaces of an instance type on nodeName.
func efaSlices(n int, nodeName string, roots int) []resourcev1.ResourceSlice {
	if n == 0 {
		return nil
	}
	devs := make([]resourcev1.Device, 0, n)
	for j := range n {
		devs = append(devs, resourcev1.Device{
			Name: fmt.Sprintf("efa-%d", j),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				EFADriver + "/rdma":      boolv(true),
				EFADriver + "/pciVendor": str("Amazon.com, Inc."),
				EFADriver + "/pciDevice": str("Elastic Fabric Adapter (EFA)"),
				EFADriver + "/ifName":    str(fmt.Sprintf("efa%d", j)),
				PCIeRootAttribute:        str(pcieRoot(rootOf(j, n, roots))),
			},
		})
	}
	return poolSlices(EFADriver, nodeName, [][]resourcev1.Device{devs}, nil)
}
