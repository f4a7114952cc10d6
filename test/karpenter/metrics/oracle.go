package metrics

// Version is the Karpenter minor version this module's oracle reads.
const Version = "v1.14"

// Source names the modules the oracle reads.
const Source = "sigs.k8s.io/karpenter v1.14.3, github.com/aws/karpenter-provider-aws v1.14.3"
