package metrics

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// LabelCategory is the status check category of karpenter_interruption_instance_status_unhealthy_total:
// InstanceStatus, SystemStatus or EventStatus.
const LabelCategory = "category"

// InstanceStatusUnhealthyName is the name of the counter NewInstanceStatusUnhealthy builds.
const InstanceStatusUnhealthyName = "karpenter_interruption_instance_status_unhealthy_total"

// NewInstanceStatusUnhealthy builds and registers karpenter_interruption_instance_status_unhealthy_total: the
// instances of this cluster found with a failing status check or a scheduled event, each instance counted once per
// category while it stays unhealthy. A nil reg leaves it unregistered (tests).
func NewInstanceStatusUnhealthy(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: InstanceStatusUnhealthyName,
		Help: "Instances of this cluster with a failing EC2 status check or a scheduled event, counted once per instance and category while unhealthy, by category.",
	}, []string{LabelCategory})
	if reg == nil {
		return c, nil
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing, nil
			}
		}
		return nil, fmt.Errorf("registering %s: %w", InstanceStatusUnhealthyName, err)
	}
	return c, nil
}
