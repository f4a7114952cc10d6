package metrics

import "github.com/prometheus/client_golang/prometheus"

// LabelCategory is the status check category of karpenter_interruption_instance_status_unhealthy_total:
// InstanceStatus, SystemStatus or EventStatus.
const LabelCategory = "category"

// InstanceStatusUnhealthyName is the name of the counter NewInstanceStatusUnhealthy builds.
const InstanceStatusUnhealthyName = "karpenter_interruption_instance_status_unhealthy_total"

// newInstanceStatusUnhealthy builds karpenter_interruption_instance_status_unhealthy_total: the instances of this
// cluster found with a failing status check or a scheduled event, each instance counted once per category while it
// stays unhealthy.
func newInstanceStatusUnhealthy() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: InstanceStatusUnhealthyName,
		Help: "Instances of this cluster with a failing EC2 status check or a scheduled event, counted once per instance and category while unhealthy, by category.",
	}, []string{LabelCategory})
}
