package settings

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// schedulerConfig is the document SCHEDULER_CONFIG holds (Karpenter v1.15): the kube-scheduler behaviour the
// scheduling simulation mirrors. Unknown fields are refused, as Karpenter refuses them.
type schedulerConfig struct {
	PodTopologySpread *struct {
		DefaultConstraints []corev1.TopologySpreadConstraint `json:"defaultConstraints,omitempty"`
	} `json:"podTopologySpread,omitempty"`
}

// applySchedulerConfig accepts an empty SCHEDULER_CONFIG, or a well-formed one that asks for no default topology
// spread constraints; default constraints are refused, since Dovetail's scheduling does not apply them yet.
func applySchedulerConfig(s *Settings, v string) error {
	if v == "" {
		s.SchedulerConfig = ""
		return nil
	}
	var c schedulerConfig
	if err := yaml.UnmarshalStrict([]byte(v), &c); err != nil {
		return fmt.Errorf("not a scheduler configuration: %w", err)
	}
	if c.PodTopologySpread != nil && len(c.PodTopologySpread.DefaultConstraints) > 0 {
		return fmt.Errorf("podTopologySpread.defaultConstraints are not supported yet: Dovetail's scheduling does not apply default topology spread constraints")
	}
	s.SchedulerConfig = v
	return nil
}
