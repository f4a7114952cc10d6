// Package termination is the controller behind the karpenter.sh/termination finalizer on Nodes: when such a Node
// is deleted it deletes the NodeClaim too, taints and drains the node through the Eviction API, waits for its
// VolumeAttachments, terminates the instance and then releases the finalizer. Decisions come from pkg/termination.
package termination
