// Package hash stamps EC2NodeClasses with the hash of their launch-time fields (karpenter.k8s.aws/ec2nodeclass-hash
// and -hash-version, as Karpenter does) and moves NodeClaims stamped in another scheme (Karpenter's, an older
// release's) to the current one, keeping the drift of those launched from an older version of their class.
package hash
