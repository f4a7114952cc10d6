package metrics

import "github.com/prometheus/client_golang/prometheus"

// LabelZoneID is an availability zone's ID (usw2-az1), which names the same zone in every account.
const LabelZoneID = "zone_id"

func newInstanceFailureMetrics(m *Metrics) {
	m.InstanceLaunchFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_cloudprovider_instance_launch_failures_total", Help: helpOf("karpenter_cloudprovider_instance_launch_failures_total"),
	}, []string{LabelZone, LabelZoneID, LabelCapacityType, LabelReason})
	m.InstanceTerminationFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_cloudprovider_instance_termination_failures_total", Help: helpOf("karpenter_cloudprovider_instance_termination_failures_total"),
	}, []string{LabelZone, LabelZoneID})
}

// CountLaunchFailure counts one offering a CreateFleet call could not launch.
func (m *Metrics) CountLaunchFailure(capacityType, reason, zone, zoneID string) {
	m.InstanceLaunchFailures.WithLabelValues(zone, zoneID, capacityType, reason).Inc()
}

// CountTerminationFailure counts one TerminateInstances call that failed.
func (m *Metrics) CountTerminationFailure(zone, zoneID string) {
	m.InstanceTerminationFailures.WithLabelValues(zone, zoneID).Inc()
}
