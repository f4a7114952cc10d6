package test

import (
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TerminationGracePeriod sets the NodeClaim's spec.terminationGracePeriod.
func (b *NodeClaimBuilder) TerminationGracePeriod(d time.Duration) *NodeClaimBuilder {
	b.nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: d}
	return b
}

// SpotInterruptionEvent is the EventBridge body of a spot interruption warning for an instance.
func SpotInterruptionEvent(instanceID string) string {
	return fmt.Sprintf(`{"version":"0","id":"spot-%[1]s","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2",`+
		`"account":"123456789012","time":"2026-11-22T10:00:00Z","region":"us-west-2",`+
		`"resources":["arn:aws:ec2:us-west-2:123456789012:instance/%[1]s"],"detail":{"instance-id":"%[1]s","instance-action":"terminate"}}`, instanceID)
}

// RebalanceEvent is the EventBridge body of a rebalance recommendation for an instance.
func RebalanceEvent(instanceID string) string {
	return fmt.Sprintf(`{"version":"0","id":"rebalance-%[1]s","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2",`+
		`"resources":["arn:aws:ec2:us-west-2:123456789012:instance/%[1]s"],"detail":{"instance-id":"%[1]s"}}`, instanceID)
}

// StateChangeEvent is the EventBridge body of an instance state-change notification.
func StateChangeEvent(instanceID, state string) string {
	return fmt.Sprintf(`{"version":"0","id":"state-%[1]s-%[2]s","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2",`+
		`"resources":["arn:aws:ec2:us-west-2:123456789012:instance/%[1]s"],"detail":{"instance-id":"%[1]s","state":"%[2]s"}}`, instanceID, state)
}

// HealthScheduledChangeEvent is the EventBridge body of an AWS Health scheduled change (instance retirement)
// starting at start.
func HealthScheduledChangeEvent(instanceID string, start time.Time) string {
	return fmt.Sprintf(`{"version":"0","id":"health-%[1]s","detail-type":"AWS Health Event","source":"aws.health","resources":["%[1]s"],`+
		`"detail":{"service":"EC2","eventTypeCategory":"scheduledChange","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",`+
		`"startTime":"%[2]s","endTime":"%[3]s","affectedEntities":[{"entityValue":"%[1]s"}]}}`,
		instanceID, start.UTC().Format(http.TimeFormat), start.Add(2*time.Hour).UTC().Format(http.TimeFormat))
}

// CapacityReservationInterruptionEvent is the EventBridge body of EC2's warning that the interruptible capacity
// reservation an instance runs in is being reclaimed.
func CapacityReservationInterruptionEvent(instanceID string) string {
	return fmt.Sprintf(`{"version":"0","id":"odcr-%[1]s","detail-type":"EC2 Capacity Reservation Instance Interruption Warning","source":"aws.ec2",`+
		`"account":"123456789012","time":"2026-11-22T10:00:00Z","region":"us-west-2",`+
		`"resources":["arn:aws:ec2:us-west-2:123456789012:instance/%[1]s"],"detail":{"instance-id":"%[1]s","instance-action":"terminate"}}`, instanceID)
}
