package fromcatalog

import (
	"github.com/dovetail/dovetail/pkg/catalog"
	"github.com/dovetail/dovetail/pkg/providers/aws/instancetype"
)

// Info converts one catalog instance type.
func Info(t *catalog.InstanceType) instancetype.Info {
	info := instancetype.Info{
		Name:                 t.Name,
		Architectures:        append([]string(nil), t.Architectures...),
		VCPU:                 int64(t.VCPU),
		MemoryMiB:            t.MemoryMiB,
		CPUManufacturer:      t.CPUManufacturer,
		ClockSpeedGHz:        t.ClockSpeedGHz,
		LocalStorageGB:       int64(t.LocalStorageGB),
		LocalNVMe:            t.LocalNVMe,
		MaxENIs:              t.MaxENIs,
		IPv4PerENI:           t.IPv4PerENI,
		NetworkBandwidthMbps: int64(t.NetworkBandwidthMbps),
		EBSBandwidthMbps:     int64(t.EBSBandwidthMbps),
		Hypervisor:           t.Hypervisor,
		BareMetal:            t.BareMetal,
		NitroEnclaves:        t.NitroEnclaves(),
		BranchENIs:           catalog.BranchENIs(t.Name),
		MaxEFAInterfaces:     t.EFAInterfaces(),
		NetworkCards:         t.NetworkCards(),
		PlacementStrategies:  t.PlacementStrategies(),
		NestedVirtualization: t.NestedVirtualization(),
	}
	for _, g := range t.GPUs {
		info.GPUs = append(info.GPUs, instancetype.Device{Name: g.Name, Manufacturer: g.Manufacturer, Count: int64(g.Count), MemoryMiB: g.MemoryMiB})
	}
	for _, a := range t.Accelerators {
		info.Accelerators = append(info.Accelerators, instancetype.Device{Name: a.Name, Manufacturer: a.Manufacturer, Count: int64(a.Count), MemoryMiB: a.MemoryMiB})
	}
	return info
}
