package metrics

import "github.com/prometheus/client_golang/prometheus"

// LabelZoneID is an availability zone's ID (usw2-az1), which names the same zone in every account.
const LabelZoneID = "zone_id"

// LabelNodeClass names an EC2NodeClass.
const LabelNodeClass = "nodeclass"

func newInstanceFailureMetrics(m *Metrics) {
	m.InstanceLaunchFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_cloudprovider_instance_launch_failures_total", Help: helpOf("karpenter_cloudprovider_instance_launch_failures_total"),
	}, []string{LabelZone, LabelZoneID, LabelCapacityType, LabelReason})
	m.EC2NodeClassUserDataBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "karpenter_ec2nodeclasses_userdata_bytes", Help: helpOf("karpenter_ec2nodeclasses_userdata_bytes"),
	}, []string{LabelNodeClass})
	m.InstanceTerminationFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "karpenter_cloudprovider_instance_termination_failures_total", Help: helpOf("karpenter_cloudprovider_instance_termination_failures_total"),
	}, []string{LabelZone, LabelZoneID})
}

// SetUserDataBytes records the size in bytes of the user data (before base64) of the launch template last created
// for an EC2NodeClass.
func (m *Metrics) SetUserDataBytes(nodeClass string, bytes int) {
	m.EC2NodeClassUserDataBytes.WithLabelValues(nodeClass).Set(float64(bytes))
}

// DeleteUserDataBytes drops an EC2NodeClass's series once its launch templates are deleted.
func (m *Metrics) DeleteUserDataBytes(nodeClass string) {
	m.EC2NodeClassUserDataBytes.DeleteLabelValues(nodeClass)
}

// CountLaunchFailure counts one offering a CreateFleet call could not launch.
func (m *Metrics) CountLaunchFailure(capacityType, reason, zone, zoneID string) {
	m.InstanceLaunchFailures.WithLabelValues(zone, zoneID, capacityType, reason).Inc()
}

// CountTerminationFailure counts one TerminateInstances call that failed.
func (m *Metrics) CountTerminationFailure(zone, zoneID string) {
	m.InstanceTerminationFailures.WithLabelValues(zone, zoneID).Inc()
}
