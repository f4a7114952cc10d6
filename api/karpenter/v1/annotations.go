package v1

// Well-known annotation keys.
const (
	// DoNotDisruptAnnotationKey set to "true" on a Pod or Node blocks voluntary disruption (consolidation,
	// drift) of the node. Expiration and interruption still proceed, bounded by terminationGracePeriod.
	DoNotDisruptAnnotationKey = Group + "/do-not-disrupt"
	// NodePoolHashAnnotationKey holds the hash of a NodePool's template, copied to its NodeClaims for drift
	// detection.
	NodePoolHashAnnotationKey = Group + "/nodepool-hash"
	// NodePoolHashVersionAnnotationKey is the version of the hashing scheme of NodePoolHashAnnotationKey.
	NodePoolHashVersionAnnotationKey = Group + "/nodepool-hash-version"
	// NodeClaimTerminationTimestampAnnotationKey is when a draining node's terminationGracePeriod ends
	// (RFC 3339).
	NodeClaimTerminationTimestampAnnotationKey = Group + "/nodeclaim-termination-timestamp"
	// NodeClaimMinValuesRelaxedAnnotationKey records that minValues were relaxed for a NodeClaim
	// ("true"/"false") under MIN_VALUES_POLICY=BestEffort.
	NodeClaimMinValuesRelaxedAnnotationKey = Group + "/nodeclaim-min-values-relaxed"
	// DoNotRepairAnnotationKey set to "true" on a Node or its NodeClaim keeps node repair from replacing the node
	// (Karpenter v1.15), whatever karpenter.sh/do-not-disrupt says.
	DoNotRepairAnnotationKey = Group + "/do-not-repair"
	// DisruptionCostAnnotationKey on a Pod is the int32 cost of evicting it, read by consolidation in place of
	// controller.kubernetes.io/pod-deletion-cost (Karpenter v1.15).
	DisruptionCostAnnotationKey = Group + "/disruption-cost"
)

// DoNotDisruptValue is the value of DoNotDisruptAnnotationKey that blocks disruption.
const DoNotDisruptValue = "true"
