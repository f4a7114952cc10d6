// Package termination holds the pure decisions of node termination: which pods on a draining node are evicted,
// in which order and when, when the NodeClaim's terminationGracePeriod forces deletions and with what grace,
// and which VolumeAttachments still hold the instance. It reads API objects and returns plans; it never calls
// the API server or the cloud.
package termination
