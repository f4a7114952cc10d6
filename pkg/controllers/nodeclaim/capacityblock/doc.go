// Package capacityblock drains nodes running in an EC2 Capacity Block before EC2 reclaims it: a NodeClaim
// labelled karpenter.k8s.aws/capacity-reservation-type=capacity-block is deleted (and so drained) 40 minutes
// before its reservation's end time, ten minutes before EC2 starts terminating the block's instances, as
// Karpenter does.
package capacityblock
