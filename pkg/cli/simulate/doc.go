// Package simulate implements `dovetailctl simulate`: it runs the provisioning scheduler (pkg/scheduling) offline
// on pods and NodePools read from files (or a snapshot of the current cluster) and prints the nodes it would
// launch, their hourly cost against a lower bound, and why any pod could not be placed.
package simulate
