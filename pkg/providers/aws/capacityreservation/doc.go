// Package capacityreservation resolves an EC2NodeClass's capacityReservationSelectorTerms into the On-Demand
// Capacity Reservations and Capacity Blocks it may launch into, turns them into "reserved" offerings priced
// as Karpenter prices them, and counts the instances still available in each reservation between
// DescribeCapacityReservations calls so launches do not overrun a reservation.
package capacityreservation
