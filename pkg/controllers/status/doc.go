// Package status emits an event on a NodeClaim, NodePool, EC2NodeClass or Node each time one of its status
// conditions changes status, and one each time a finalizer is removed from it, as Karpenter's status controllers
// do: the event's reason is the condition's type (or Finalized).
package status
