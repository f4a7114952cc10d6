package settings

import (
	"testing"

	awscloudprovider "github.com/aws/karpenter-provider-aws/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/controllers/nodeclaim/disruption"
	"sigs.k8s.io/karpenter/pkg/events"
	"sigs.k8s.io/karpenter/pkg/metrics"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// TestEventAndConditionReasons checks Dovetail's event reasons, Drifted reasons and disruption metric reasons
// against the constants of Karpenter v1.14's own packages.
func TestEventAndConditionReasons(t *testing.T) {
	for _, c := range []struct{ dovetail, karpenter string }{
		{karpv1.EventReasonDisruptionBlocked, events.DisruptionBlocked},
		{karpv1.EventReasonDisruptionLaunching, events.DisruptionLaunching},
		{karpv1.EventReasonDisruptionTerminating, events.DisruptionTerminating},
		{karpv1.EventReasonDisruptionWaitingReadiness, events.DisruptionWaitingReadiness},
		{karpv1.EventReasonUnconsolidatable, events.Unconsolidatable},
		{karpv1.EventReasonConsolidationCandidate, events.ConsolidationCandidate},
		{karpv1.EventReasonConsolidationRejected, events.ConsolidationRejected},
		{karpv1.EventReasonConsolidationApproved, events.ConsolidationApproved},
		{karpv1.EventReasonFailedScheduling, events.FailedScheduling},
		{karpv1.EventReasonNoCompatibleInstanceTypes, events.NoCompatibleInstanceTypes},
		{karpv1.EventReasonNominated, events.Nominated},
		{karpv1.EventReasonNodeRepairBlocked, events.NodeRepairBlocked},
		{karpv1.EventReasonDisrupted, events.Disrupted},
		{karpv1.EventReasonEvicted, events.Evicted},
		{karpv1.EventReasonFailedDraining, events.FailedDraining},
		{karpv1.EventReasonTerminationGracePeriodExpiring, events.TerminationGracePeriodExpiring},
		{karpv1.EventReasonFailedConsistencyCheck, events.FailedConsistencyCheck},
		{karpv1.EventReasonInsufficientCapacityError, events.InsufficientCapacityError},
		{karpv1.EventReasonUnregisteredTaintMissing, events.UnregisteredTaintMissing},
		{karpv1.EventReasonNodeClassNotReady, events.NodeClassNotReady},
		{karpv1.ReasonNodePoolDrifted, string(disruption.NodePoolDrifted)},
		{karpv1.ReasonRequirementsDrifted, string(disruption.RequirementsDrifted)},
		{karpv1.ReasonInstanceTypeNotFound, string(disruption.InstanceTypeNotFound)},
		{karpv1.ReasonNodeClassDrift, string(awscloudprovider.NodeClassDrift)},
		{karpv1.ReasonAMIDrift, string(awscloudprovider.AMIDrift)},
		{karpv1.ReasonSubnetDrift, string(awscloudprovider.SubnetDrift)},
		{karpv1.ReasonSecurityGroupDrift, string(awscloudprovider.SecurityGroupDrift)},
		{karpv1.ReasonCapacityReservationDrift, string(awscloudprovider.CapacityReservationDrift)},
		{karpv1.ReasonPlacementGroupDrift, string(awscloudprovider.PlacementGroupDrift)},
		{karpv1.MetricReasonProvisioned, metrics.ProvisionedReason},
		{karpv1.MetricReasonExpired, metrics.ExpiredReason},
		{karpv1.MetricReasonUnhealthy, metrics.UnhealthyReason},
	} {
		if c.dovetail != c.karpenter {
			t.Errorf("Dovetail's %q, Karpenter's %q", c.dovetail, c.karpenter)
		}
	}
}
