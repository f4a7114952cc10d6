package settings

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// schedulerConfig is the document SCHEDULER_CONFIG holds (Karpenter v1.15): the kube-scheduler behaviour the
// scheduling simulation mirrors. Unknown fields are refused, as Karpenter refuses them.
type schedulerConfig struct {
	PodTopologySpread *struct {
		DefaultConstraints []corev1.TopologySpreadConstraint `json:"defaultConstraints,omitempty"`
	} `json:"podTopologySpread,omitempty"`
}

// applySchedulerConfig parses SCHEDULER_CONFIG. Its podTopologySpread.defaultConstraints are checked as the
// kube-scheduler checks its PodTopologySpread arguments (a config one accepts the other accepts) and kept in
// DefaultSpreadConstraints, which scheduling applies to pods without constraints of their own.
func applySchedulerConfig(s *Settings, v string) error {
	s.SchedulerConfig, s.DefaultSpreadConstraints = "", nil
	if strings.TrimSpace(v) == "" {
		return nil
	}
	var c schedulerConfig
	if err := yaml.UnmarshalStrict([]byte(v), &c); err != nil {
		return fmt.Errorf("not a scheduler configuration: %w", err)
	}
	var constraints []corev1.TopologySpreadConstraint
	if c.PodTopologySpread != nil {
		constraints = c.PodTopologySpread.DefaultConstraints
	}
	for i, tsc := range constraints {
		if err := checkDefaultConstraint(tsc); err != nil {
			return fmt.Errorf("podTopologySpread.defaultConstraints[%d]: %w", i, err)
		}
		for j := 0; j < i; j++ {
			if constraints[j].TopologyKey == tsc.TopologyKey && constraints[j].WhenUnsatisfiable == tsc.WhenUnsatisfiable {
				return fmt.Errorf("podTopologySpread.defaultConstraints[%d]: repeats [%d] (topologyKey %q, whenUnsatisfiable %s)",
					i, j, tsc.TopologyKey, tsc.WhenUnsatisfiable)
			}
		}
	}
	s.SchedulerConfig = v
	s.DefaultSpreadConstraints = constraints
	return nil
}

// checkDefaultConstraint refuses what the kube-scheduler refuses in a default constraint: the selector is
// deduced for each pod, so none may be given.
func checkDefaultConstraint(tsc corev1.TopologySpreadConstraint) error {
	switch {
	case tsc.MaxSkew <= 0:
		return fmt.Errorf("maxSkew %d must be greater than 0", tsc.MaxSkew)
	case tsc.TopologyKey == "":
		return fmt.Errorf("topologyKey is required")
	case tsc.WhenUnsatisfiable != corev1.DoNotSchedule && tsc.WhenUnsatisfiable != corev1.ScheduleAnyway:
		return fmt.Errorf("whenUnsatisfiable %q must be %s or %s", tsc.WhenUnsatisfiable, corev1.DoNotSchedule, corev1.ScheduleAnyway)
	case tsc.LabelSelector != nil:
		return fmt.Errorf("labelSelector must not be set: the selector is deduced for each pod from the Services and controller selecting it")
	case len(tsc.MatchLabelKeys) > 0:
		return fmt.Errorf("matchLabelKeys must not be set: the kube-scheduler ignores it in default constraints")
	}
	if errs := validation.IsQualifiedName(tsc.TopologyKey); len(errs) > 0 {
		return fmt.Errorf("topologyKey %q: %s", tsc.TopologyKey, strings.Join(errs, "; "))
	}
	return nil
}
