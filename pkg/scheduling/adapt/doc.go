// Package adapt converts Dovetail's API objects (karpenter.sh/v1 NodePool and NodeClaim, Nodes with their pods)
// into the scheduler's snapshot types, so pkg/scheduling itself stays independent of the CRD types. It is pure:
// no client calls.
package adapt
