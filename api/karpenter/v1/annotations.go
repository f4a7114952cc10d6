package v1

import "strings"

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
	// NodeClaimMinValuesRelaxedAnnotationKey is set on every NodeClaim the provisioner creates: "true" when the
	// instance types it may launch as fall short of a requirement's minValues (possible only under
	// MIN_VALUES_POLICY=BestEffort), "false" otherwise.
	NodeClaimMinValuesRelaxedAnnotationKey = Group + "/nodeclaim-min-values-relaxed"
	// PriceOverlayAppliedAnnotationKey ("true") marks a NodeClaim among whose instance types is one whose price a
	// NodeOverlay set, and CapacityOverlayAppliedAnnotationKey one whose capacity a NodeOverlay extended.
	PriceOverlayAppliedAnnotationKey    = Group + "/price-overlay-applied"
	CapacityOverlayAppliedAnnotationKey = Group + "/capacity-overlay-applied"
	// DoNotRepairAnnotationKey set to "true" on a Node or its NodeClaim keeps node repair from replacing the node
	// (Karpenter v1.15), whatever karpenter.sh/do-not-disrupt says.
	DoNotRepairAnnotationKey = Group + "/do-not-repair"
	// DisruptionCostAnnotationKey on a Pod is the int32 cost of evicting it, read by consolidation in place of
	// controller.kubernetes.io/pod-deletion-cost (Karpenter v1.15).
	DisruptionCostAnnotationKey = Group + "/disruption-cost"
	// RebootPreBootIDAnnotationKey on a NodeClaim holds its Node's boot ID from before the reboot was issued: a
	// different boot ID means the reboot happened and is not issued again. Removed when the reboot ends.
	RebootPreBootIDAnnotationKey = Group + "/reboot-pre-boot-id"
	// RebootTerminationGracePeriodAnnotationKey on a NodeClaim bounds the drain before a reboot (a Go duration;
	// "0s" reboots at once); without it the drain waits for every pod.
	RebootTerminationGracePeriodAnnotationKey = Group + "/reboot-termination-grace-period"
)

// NodeClassLabelKey is the label naming the node class of a NodeClaim and its Node, <group>/<lowercased kind>
// (karpenter.k8s.aws/ec2nodeclass for an EC2NodeClass), set at launch like karpenter.sh/nodepool.
func NodeClassLabelKey(ref *NodeClassReference) string {
	return ref.Group + "/" + strings.ToLower(ref.Kind)
}

// DoNotDisruptValue is the value of DoNotDisruptAnnotationKey that blocks disruption.
const DoNotDisruptValue = "true"
