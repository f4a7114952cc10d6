// Package hash keeps the karpenter.sh/nodepool-hash and -hash-version annotations of every NodePool up to date
// (the hash is hashversion.NodePool's). The hash covers the template fields whose change makes existing nodes
// drift (labels, annotations, taints, startup taints, node class reference, expireAfter,
// terminationGracePeriod); requirements are compared apart.
package hash
