package devices

import (
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/dovetail/dovetail/pkg/catalog"
)

// EFADriver is the driver name of the dranet DRA driver, which publishes the EFA interfaces of a node.
const EFADriver = "dra.net"

// efaInterfaces is the number of EFA interfaces an instance type offers to pods in the EFA device model: the
// catalog's count (catalog.InstanceType.EFAInterfaces, the one table of EFA interfaces) for the accelerated types
// (GPUs or other accelerators) the model covers, none for the others.
func efaInterfaces(it *catalog.InstanceType) int {
	if len(it.GPUs) == 0 && len(it.Accelerators) == 0 {
		return 0
	}
	return it.EFAInterfaces()
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
