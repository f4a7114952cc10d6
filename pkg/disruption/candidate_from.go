package disruption

import (
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

// CandidateFrom describes one of Dovetail's nodes for the decision: its NodeClaim, the Node it registered as,
// the pods bound to that Node (not terminal) and the instance types of its NodePool, which give its price. The
// disruption controller and `dovetailctl explain node` build their candidates with it.
func CandidateFrom(nc *karpv1.NodeClaim, node *corev1.Node, pods []*corev1.Pod, types []*cloudprovider.InstanceType) *Candidate {
	labels := node.Labels
	c := &Candidate{
		NodeClaim:       nc.Name,
		Node:            node.Name,
		NodePool:        nc.NodePoolName(),
		InstanceType:    labels[corev1.LabelInstanceTypeStable],
		Zone:            labels[corev1.LabelTopologyZone],
		CapacityType:    labels[karpv1.CapacityTypeLabelKey],
		ReservationID:   labels[awsv1.LabelCapacityReservationID],
		Pods:            pods,
		NodeAnnotations: node.Annotations,
		Initialized:     nc.IsTrue(karpv1.ConditionTypeInitialized),
		Deleting:        !nc.DeletionTimestamp.IsZero() || !node.DeletionTimestamp.IsZero(),
		Consolidatable:  nc.IsTrue(karpv1.ConditionTypeConsolidatable),
		CreatedAt:       nc.CreationTimestamp.Time,
	}
	if c.ReservationID == "" {
		c.ReservationID = nc.Labels[awsv1.LabelCapacityReservationID]
	}
	if cond := nc.GetCondition(karpv1.ConditionTypeDrifted); cond != nil && cond.Status == "True" {
		c.Drifted = cond.Reason
	}
	c.Price = OfferingPrice(types, c.InstanceType, c.Zone, c.CapacityType)
	return c
}

// OfferingPrice is the hourly price of the offering a node runs as; 0 when the instance types no longer list it
// (then consolidation can only delete the node, never replace it with a "cheaper" one).
func OfferingPrice(types []*cloudprovider.InstanceType, name, zone, capacityType string) float64 {
	for _, it := range types {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == capacityType {
				return o.Price
			}
		}
	}
	return 0
}
