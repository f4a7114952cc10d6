// Package capacitytype keeps the karpenter.sh/capacity-type label true after a capacity reservation ends: a
// NodeClaim (and its registered Node) launched into an On-Demand Capacity Reservation that expired or was
// cancelled, whose instance therefore runs on as plain on-demand, is relabelled on-demand, as Karpenter does.
package capacitytype
