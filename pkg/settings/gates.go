package settings

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrFeatureNotImplemented is returned (wrapped) when FEATURE_GATES turns on a gate Dovetail accepts, for
// compatibility with Karpenter's settings, but whose feature it does not have yet.
var ErrFeatureNotImplemented = errors.New("the feature is not implemented yet in this version")

// FeatureGate describes one gate accepted in FEATURE_GATES.
type FeatureGate struct {
	// Name is the gate's name, as Karpenter spells it.
	Name string
	// Default is Dovetail's default.
	Default bool
	// KarpenterDefault is Karpenter v1.14's default; it differs from Default only for a gate Karpenter turns on
	// whose feature Dovetail does not have (turning it on would be a promise Dovetail cannot keep).
	KarpenterDefault bool
	// Implemented is false for a gate accepted only so that a Karpenter configuration setting it to false keeps
	// working; setting it to true is refused at startup.
	Implemented bool
}

// FeatureGates returns every gate FEATURE_GATES accepts, in documentation order.
func FeatureGates() []FeatureGate {
	return []FeatureGate{
		{Name: FeatureSpotToSpotConsolidation, Implemented: true},
		{Name: FeatureNodeRepair, Implemented: true},
		{Name: FeatureReservedCapacity, Default: true, KarpenterDefault: true, Implemented: true},
		{Name: FeatureNodeOverlay, Implemented: true},
		{Name: FeatureStaticCapacity, Implemented: true},
		{Name: FeatureCapacityBuffer, Implemented: true},
	}
}

// defaultFeatureGates are the gates known to Dovetail with their default values.
func defaultFeatureGates() map[string]bool {
	m := map[string]bool{}
	for _, g := range FeatureGates() {
		m[g.Name] = g.Default
	}
	return m
}

// defaultFeatureGatesString is the default of FEATURE_GATES, every gate named, in documentation order.
func defaultFeatureGatesString() string {
	var pairs []string
	for _, g := range FeatureGates() {
		pairs = append(pairs, g.Name+"="+strconv.FormatBool(g.Default))
	}
	return strings.Join(pairs, ",")
}

// applyFeatureGates starts from the defaults and applies the Name=bool pairs in v. An unknown name, a value that
// is not a boolean, and true for a gate whose feature is not implemented are errors naming the gate.
func applyFeatureGates(s *Settings, v string) error {
	known := map[string]FeatureGate{}
	for _, g := range FeatureGates() {
		known[g.Name] = g
	}
	gates := defaultFeatureGates()
	for _, pair := range strings.Split(v, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, val, ok := strings.Cut(pair, "=")
		if !ok {
			return fmt.Errorf("%q is not Name=true|false", pair)
		}
		name = strings.TrimSpace(name)
		g, ok := known[name]
		if !ok {
			return fmt.Errorf("unknown feature gate %q (known: %s)", name, strings.Join(knownGates(), ", "))
		}
		b, err := strconv.ParseBool(strings.TrimSpace(val))
		if err != nil {
			return fmt.Errorf("feature gate %s: value must be true or false, got %q", name, val)
		}
		if b && !g.Implemented {
			return fmt.Errorf("%s=true: %w", name, ErrFeatureNotImplemented)
		}
		gates[name] = b
	}
	s.FeatureGates = gates
	return nil
}

// knownGates are the accepted gate names, in documentation order.
func knownGates() []string {
	var names []string
	for _, g := range FeatureGates() {
		names = append(names, g.Name)
	}
	return names
}
