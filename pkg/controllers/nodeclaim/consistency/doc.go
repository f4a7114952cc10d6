// Package consistency checks that the Node a NodeClaim registered as is what was launched: every resource the
// NodeClaim requested that the cloud provider promised a capacity of is at least 90% there. It sets the NodeClaim's
// ConsistentStateFound condition and warns with FailedConsistencyCheck events, as Karpenter's consistency
// controller does.
package consistency
