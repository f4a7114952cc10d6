package v1

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Well-known label keys Dovetail sets on NodeClaims and Nodes.
const (
	// NodePoolLabelKey names the NodePool that owns a NodeClaim or Node.
	NodePoolLabelKey = Group + "/nodepool"
	// NodeRegisteredLabelKey is set to "true" on a Node once it registered for its NodeClaim.
	NodeRegisteredLabelKey = Group + "/registered"
	// NodeInitializedLabelKey is set to "true" on a Node once it is ready for pods.
	NodeInitializedLabelKey = Group + "/initialized"
	// NodeDoNotSyncTaintsLabelKey on a Node stops Dovetail from syncing the NodeClaim's taints to it.
	NodeDoNotSyncTaintsLabelKey = Group + "/do-not-sync-taints"
	// CapacityTypeLabelKey is the purchase option of a node: spot, on-demand or reserved.
	CapacityTypeLabelKey = Group + "/capacity-type"
)

// Capacity types, the values of CapacityTypeLabelKey.
const (
	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeReserved = "reserved"
)

// Architectures and operating systems, values of kubernetes.io/arch and kubernetes.io/os.
const (
	ArchitectureAmd64 = "amd64"
	ArchitectureArm64 = "arm64"
	OSLinux           = "linux"
	OSWindows         = "windows"
)

// Label domains whose keys may not be used in NodePool requirements or template labels, except for the
// well-known keys and the exceptions below.
const (
	// LabelDomainKubernetes is restricted except for well-known keys and the node.kubernetes.io and
	// node-restriction.kubernetes.io domains.
	LabelDomainKubernetes = "kubernetes.io"
	// LabelDomainK8s is restricted except for kops.k8s.io.
	LabelDomainK8s = "k8s.io"
	// LabelDomainKarpenter is restricted except for karpenter.sh/capacity-type (and karpenter.sh/nodepool in
	// requirements).
	LabelDomainKarpenter = Group
)

// RestrictedLabelDomains returns the label domains whose keys are restricted (subdomains included).
func RestrictedLabelDomains() []string {
	return []string{LabelDomainKubernetes, LabelDomainK8s, LabelDomainKarpenter}
}

// LabelDomainExceptions returns subdomains of restricted domains whose keys are allowed.
func LabelDomainExceptions() []string {
	return []string{"kops.k8s.io", "node.kubernetes.io", corev1.LabelNamespaceNodeRestriction}
}

// WellKnownLabels returns the provider-independent label keys that may appear in requirements and that
// Dovetail sets on nodes. Cloud-specific keys (awsv1.WellKnownLabels) add to these.
func WellKnownLabels() sets.Set[string] {
	return sets.New(
		NodePoolLabelKey,
		CapacityTypeLabelKey,
		corev1.LabelTopologyZone,
		corev1.LabelTopologyRegion,
		corev1.LabelInstanceTypeStable,
		corev1.LabelArchStable,
		corev1.LabelOSStable,
		corev1.LabelWindowsBuild,
		// Deprecated beta keys, still accepted for compatibility with older manifests.
		corev1.LabelFailureDomainBetaZone,
		corev1.LabelFailureDomainBetaRegion,
		corev1.LabelInstanceType,
		"beta.kubernetes.io/arch",
		"beta.kubernetes.io/os",
	)
}

// RestrictedLabels returns keys that are rejected in requirements and template labels even though their
// domain could allow them: the hostname is chosen by the kubelet.
func RestrictedLabels() sets.Set[string] {
	return sets.New(corev1.LabelHostname)
}

// LabelDomain returns the prefix of a label key (the part before '/'), or "" if it has none.
func LabelDomain(key string) string {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return key[:i]
	}
	return ""
}

// InDomain reports whether domain equals d or is a subdomain of d.
func InDomain(domain, d string) bool {
	return domain == d || strings.HasSuffix(domain, "."+d)
}

// LabelPolicy decides which label keys users may put in requirements and template labels. The zero value
// is not useful: start from DefaultLabelPolicy and add the cloud provider's keys (awsv1.LabelPolicy does).
// +kubebuilder:object:generate=false
type LabelPolicy struct {
	// WellKnown keys are allowed in requirements even when their domain is restricted.
	WellKnown sets.Set[string]
	// RestrictedDomains are the domains (with subdomains) whose other keys are rejected.
	RestrictedDomains []string
	// DomainExceptions are subdomains of restricted domains whose keys are allowed.
	DomainExceptions []string
	// Restricted keys are rejected everywhere.
	Restricted sets.Set[string]
}

// DefaultLabelPolicy returns the provider-independent policy.
func DefaultLabelPolicy() LabelPolicy {
	return LabelPolicy{
		WellKnown:         WellKnownLabels(),
		RestrictedDomains: RestrictedLabelDomains(),
		DomainExceptions:  LabelDomainExceptions(),
		Restricted:        RestrictedLabels(),
	}
}

// ValidateRequirementKey returns an error if key may not be used in a NodeClaim requirement (or a pod's node
// selector that Dovetail schedules). karpenter.sh/nodepool is allowed here: Dovetail writes it into the
// requirements of the NodeClaims it creates.
func (p LabelPolicy) ValidateRequirementKey(key string) error {
	if p.Restricted.Has(key) {
		return fmt.Errorf("label %q is restricted", key)
	}
	if p.WellKnown.Has(key) {
		return nil
	}
	domain := LabelDomain(key)
	for _, ex := range p.DomainExceptions {
		if InDomain(domain, ex) {
			return nil
		}
	}
	for _, d := range p.RestrictedDomains {
		if InDomain(domain, d) {
			return fmt.Errorf("label %q is restricted: keys in the %q domain must be well-known labels", key, d)
		}
	}
	return nil
}

// ValidateNodePoolRequirementKey returns an error if key may not be used in a NodePool's template
// requirements: ValidateRequirementKey plus karpenter.sh/nodepool, which Dovetail sets itself.
func (p LabelPolicy) ValidateNodePoolRequirementKey(key string) error {
	if key == NodePoolLabelKey {
		return fmt.Errorf("label %q is set by Dovetail and may not be used in a NodePool", key)
	}
	return p.ValidateRequirementKey(key)
}

// ValidateTemplateLabelKey returns an error if key may not be set in a NodePool's template labels. The rules
// are those of ValidateNodePoolRequirementKey.
func (p LabelPolicy) ValidateTemplateLabelKey(key string) error {
	return p.ValidateNodePoolRequirementKey(key)
}

// IsRestrictedLabel returns an error if key may not be used in a NodePool requirement or template label under
// the provider-independent policy. AWS-aware code should use awsv1.IsRestrictedLabel.
func IsRestrictedLabel(key string) error {
	return DefaultLabelPolicy().ValidateNodePoolRequirementKey(key)
}
