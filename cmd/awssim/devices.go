package main

import (
	"fmt"
	"os"

	"github.com/dovetail/dovetail/pkg/catalog"
	"github.com/dovetail/dovetail/pkg/dra/devices"
	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
)

// deviceModels builds the device models behind --dra-drivers and --dra-device-models: nil when both are empty
// (Nodes then carry no ResourceSlices).
func deviceModels(cat *catalog.Catalog, drivers []string, overridesFile string) (awssim.DeviceModels, error) {
	if len(drivers) == 0 && overridesFile == "" {
		return nil, nil
	}
	var opts devices.Options
	for _, d := range drivers {
		switch d {
		case devices.NVIDIADriver:
			opts.NVIDIAGPU = true
		case devices.EFADriver:
			opts.EFA = true
		default:
			return nil, fmt.Errorf("--dra-drivers: unknown driver %q (want %s or %s)", d, devices.NVIDIADriver, devices.EFADriver)
		}
	}
	if overridesFile != "" {
		data, err := os.ReadFile(overridesFile)
		if err != nil {
			return nil, fmt.Errorf("--dra-device-models: %w", err)
		}
		if opts.Overrides, err = devices.ParseOverrides(data); err != nil {
			return nil, fmt.Errorf("--dra-device-models %s: %w", overridesFile, err)
		}
	}
	m, err := devices.New(cat, opts)
	if err != nil {
		return nil, fmt.Errorf("DRA device models: %w", err)
	}
	return m, nil
}
