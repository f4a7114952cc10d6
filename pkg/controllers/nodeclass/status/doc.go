// Package status is the EC2NodeClass controller: it resolves selectors (subnets, security groups, AMIs, instance
// profile) into status with conditions a user can act on, and runs the karpenter.k8s.aws/termination finalizer,
// which waits for the NodeClaims using the class before deleting its launch templates and instance profile.
package status
