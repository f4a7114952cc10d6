// Package lifecycle drives a NodeClaim from creation to a ready node: Launch (cloud provider Create), Registration
// (match the Node by provider ID, sync labels and taints, adopt it) and Initialization (Node ready, startup taints
// gone, extended resources registered). Deletion is the termination controllers' job.
package lifecycle
