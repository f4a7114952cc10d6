package settings

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrFeatureNotImplemented is returned (wrapped) when FEATURE_GATES or AWS_FEATURE_GATES turns on a gate Dovetail
// accepts, for compatibility with Karpenter's settings, but whose feature it does not have yet.
var ErrFeatureNotImplemented = errors.New("the feature is not implemented yet in this version")

// FeatureGate describes one gate accepted in FEATURE_GATES or AWS_FEATURE_GATES.
type FeatureGate struct {
	// Name is the gate's name, as Karpenter spells it.
	Name string
	// Default is Dovetail's default.
	Default bool
	// KarpenterDefault is Karpenter's default; it differs from Default only for a gate Karpenter turns on whose
	// feature Dovetail does not have (turning it on would be a promise Dovetail cannot keep).
	KarpenterDefault bool
	// Since is the first Karpenter minor version that accepts the gate ("v1.14" for the gates v1.14 has).
	Since string
	// Implemented is false for a gate accepted only so that a Karpenter configuration setting it to false keeps
	// working; setting it to true is refused at startup.
	Implemented bool
	// Doc says what the gate does in Dovetail, for the settings reference (Markdown).
	Doc string
}

// RemovedFeatureGate is a gate Karpenter once accepted and removed: Dovetail accepts it, with a warning that it
// does nothing, so that an old configuration still starts.
type RemovedFeatureGate struct {
	Name string
	// Versions are the Karpenter versions that had the gate.
	Versions string
	// Why says what became of the feature.
	Why string
}

// FeatureGates returns every gate FEATURE_GATES accepts, in Karpenter v1.15's order (its default string's).
func FeatureGates() []FeatureGate {
	return []FeatureGate{
		{Name: FeatureNodeRepair, Since: "v1.14", Implemented: true, Doc: "implemented: unhealthy nodes are replaced, by the disruption controller (replacement first, within the `Unhealthy` budgets), or by the legacy repair controller with `LEGACY_NODE_REPAIR` ([repair](repair.md))"},
		{Name: FeatureReservedCapacity, Default: true, KarpenterDefault: true, Since: "v1.14", Implemented: true, Doc: "implemented: `capacityReservationSelectorTerms` select On-Demand Capacity Reservations and Capacity Blocks, launched first as `karpenter.sh/capacity-type: reserved` ([reserved capacity](reserved-capacity.md)); `false` ignores the terms and the EC2NodeClass says so (`CapacityReservationsReady` reason `ReservedCapacityDisabled`)"},
		{Name: FeatureSpotToSpotConsolidation, Since: "v1.14", Implemented: true, Doc: "implemented: consolidation may replace spot nodes with cheaper spot nodes ([disruption](disruption.md))"},
		{Name: FeatureNodeOverlay, Since: "v1.14", Implemented: true, Doc: "implemented: NodeOverlays change instance type prices and add extended resources ([NodeOverlay](nodeoverlay.md)); with it off, overlays are ignored and say so in their status"},
		{Name: FeatureStaticCapacity, Since: "v1.14", Implemented: true, Doc: "implemented: a NodePool with `spec.replicas` keeps that many nodes ([static NodePools](static-nodepools.md))"},
		{Name: FeatureCapacityBuffer, Since: "v1.14", Implemented: true, Doc: "implemented: `CapacityBuffer` objects (autoscaling.x-k8s.io/v1beta1) keep spare room for pods of a given shape ([capacity buffers](capacitybuffer.md)); off, buffers are ignored and the controller says so once in its log"},
		{Name: FeatureTerminateFirstDrift, Since: "v1.15", Implemented: true, Doc: "implemented: a drifted node of a static NodePool that `limits.nodes` leaves no room to replace first is deleted first, and the NodePool refills ([static NodePools](static-nodepools.md#what-dovetail-does)); a drifted node in a full capacity reservation whose pods need the room it gives back is deleted first, and the provisioner replaces it ([reserved capacity](reserved-capacity.md#terminate-first))"},
		{Name: FeatureTerminateFirstRepair, Since: "v1.15", Implemented: true, Doc: "implemented: an unhealthy node under node repair in a full capacity reservation whose pods need the room it gives back, or whose NodePool's limits leave no room to replace it first, is deleted first, and the provisioner replaces it ([repair](repair.md#terminate-first-terminatefirstrepair)); a static NodePool's unhealthy nodes are always deleted first"},
		{Name: FeaturePodDeletionCostManagement, Since: "v1.15", Implemented: true, Doc: "implemented: every minute the controller writes `controller.kubernetes.io/pod-deletion-cost` on the ReplicaSet pods of its nodes in the order disruption would take them (nodes being deleted lowest), so a scale-down empties those nodes first, and consolidation then reads only `karpenter.sh/disruption-cost` ([disruption](disruption.md#pod-deletion-cost))"},
	}
}

// RemovedFeatureGates returns the gates Karpenter (v0.32 to v1.15) accepted in FEATURE_GATES and removed.
func RemovedFeatureGates() []RemovedFeatureGate {
	return []RemovedFeatureGate{
		{Name: "Drift", Versions: "v0.32–v0.37 (removed in v1.0)", Why: "drift is always detected and acted on since Karpenter v1.0, which removed the gate; " +
			"to keep drifted nodes, use NodePool disruption budgets with reasons: [Drifted]"},
	}
}

// AWSFeatureGates returns every gate AWS_FEATURE_GATES accepts, in Karpenter v1.15's order.
func AWSFeatureGates() []FeatureGate {
	return []FeatureGate{
		{Name: AWSFeatureNodeClassCEL, Since: "v1.15", Implemented: true, Doc: "implemented: `spec.kubelet` `maxPods`, `kubeReserved` and `systemReserved` may be CEL expressions, evaluated per instance type with `vcpus`, `memory_mib`, `default_enis`, `ips_per_eni`, `max_pods`, `instance_type`, `min` and `max` ([API](api.md#karpenter-v115)); off, an EC2NodeClass holding an expression is not ready (`ValidationSucceeded=False`, reason `KubeletExpressionsDisabled`)"},
		{Name: AWSFeatureDRANVIDIAGPU, Since: "v1.15", Implemented: true, Doc: "implemented: with `IGNORE_DRA_REQUESTS=false`, instance types with NVIDIA GPUs carry the devices the NVIDIA GPU DRA driver (`gpu.nvidia.com`) publishes, MIG partitions included, and claims are planned against them ([DRA](dra.md))"},
		{Name: AWSFeatureDRAEFA, Since: "v1.15", Implemented: true, Doc: "implemented: with `IGNORE_DRA_REQUESTS=false`, instance types with EFA carry the EFA interfaces the dranet driver (`dra.net`) publishes, on the PCIe roots of their GPUs ([DRA](dra.md))"},
		{Name: AWSFeatureRebootForRepair, Since: "v1.15", Implemented: true, Doc: "implemented: with `NodeRepair=true`, a node whose `AcceleratedHardwareReady=False` reason names a GPU fault a reboot clears (NVIDIA XID 46, 48, 54, 62, 63, 95, 109, 110, 136, 140, 143, 155, 156, 158) is rebooted in place (`ec2:RebootInstances`) instead of replaced; a node not back within 20 minutes, or rebooted twice within 24 hours, is replaced ([repair](repair.md#reboot-rebootforrepair))"},
	}
}

// defaultFeatureGates are the gates known to Dovetail with their default values.
func defaultFeatureGates() map[string]bool { return gateDefaults(FeatureGates()) }

// defaultAWSFeatureGates are the AWS gates with their default values.
func defaultAWSFeatureGates() map[string]bool { return gateDefaults(AWSFeatureGates()) }

func gateDefaults(gates []FeatureGate) map[string]bool {
	m := map[string]bool{}
	for _, g := range gates {
		m[g.Name] = g.Default
	}
	return m
}

// defaultFeatureGatesString is the default of FEATURE_GATES, every gate named, in Karpenter's order.
func defaultFeatureGatesString() string { return gatesString(FeatureGates()) }

// defaultAWSFeatureGatesString is the default of AWS_FEATURE_GATES.
func defaultAWSFeatureGatesString() string { return gatesString(AWSFeatureGates()) }

func gatesString(gates []FeatureGate) string {
	pairs := make([]string, 0, len(gates))
	for _, g := range gates {
		pairs = append(pairs, g.Name+"="+strconv.FormatBool(g.Default))
	}
	return strings.Join(pairs, ",")
}

// applyFeatureGates starts from the defaults and applies the Name=bool pairs in v. An unknown name, a value that
// is not a boolean, and true for a gate whose feature is not implemented are errors naming the gate; a gate
// Karpenter removed adds a warning.
func applyFeatureGates(s *Settings, v string) error {
	removed := map[string]string{}
	for _, r := range RemovedFeatureGates() {
		removed[r.Name] = r.Why
	}
	gates, warnings, err := parseGates(v, FeatureGates(), removed)
	if err != nil {
		return err
	}
	s.FeatureGates = gates
	s.Warnings = append(s.Warnings, warnings...)
	return nil
}

// applyAWSFeatureGates is applyFeatureGates for AWS_FEATURE_GATES.
func applyAWSFeatureGates(s *Settings, v string) error {
	gates, _, err := parseGates(v, AWSFeatureGates(), nil)
	if err != nil {
		return err
	}
	s.AWSFeatureGates = gates
	return nil
}

// ParseAWSFeatureGates reads an AWS_FEATURE_GATES value (Name=true|false pairs) over the gates' defaults, as the
// controller does; an unknown name is an error.
func ParseAWSFeatureGates(v string) (map[string]bool, error) {
	gates, _, err := parseGates(v, AWSFeatureGates(), nil)
	return gates, err
}

// parseGates reads comma-separated Name=bool pairs over the defaults of known. A name in removed is accepted with
// a warning; any other unknown name is an error.
func parseGates(v string, known []FeatureGate, removed map[string]string) (map[string]bool, []string, error) {
	byName := map[string]FeatureGate{}
	names := make([]string, 0, len(known))
	for _, g := range known {
		byName[g.Name] = g
		names = append(names, g.Name)
	}
	gates := gateDefaults(known)
	var warnings []string
	for _, pair := range strings.Split(v, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, val, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, nil, fmt.Errorf("%q is not Name=true|false", pair)
		}
		name = strings.TrimSpace(name)
		b, err := strconv.ParseBool(strings.TrimSpace(val))
		if why, gone := removed[name]; gone {
			if err != nil {
				return nil, nil, fmt.Errorf("feature gate %s: value must be true or false, got %q", name, val)
			}
			warnings = append(warnings, fmt.Sprintf("feature gate %s does nothing: %s", name, why))
			continue
		}
		g, ok := byName[name]
		if !ok {
			return nil, nil, fmt.Errorf("unknown feature gate %q (known: %s)", name, strings.Join(names, ", "))
		}
		if err != nil {
			return nil, nil, fmt.Errorf("feature gate %s: value must be true or false, got %q", name, val)
		}
		if b && !g.Implemented {
			return nil, nil, fmt.Errorf("%s=true: %w", name, ErrFeatureNotImplemented)
		}
		gates[name] = b
	}
	return gates, warnings, nil
}
