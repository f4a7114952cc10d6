package v1

// AWS annotation keys.
const (
	// AnnotationEC2NodeClassHash holds the hash of the EC2NodeClass fields that cause drift.
	AnnotationEC2NodeClassHash = Group + "/ec2nodeclass-hash"
	// AnnotationEC2NodeClassHashVersion is the version of the hashing scheme of AnnotationEC2NodeClassHash.
	AnnotationEC2NodeClassHashVersion = Group + "/ec2nodeclass-hash-version"
	// AnnotationInstanceTagged records on a NodeClaim that its instance got its Name and nodeclaim tags.
	AnnotationInstanceTagged = Group + "/tagged"
)

// Tags Dovetail puts on AWS resources; users may not set the restricted ones in EC2NodeClass.spec.tags.
const (
	TagNodePool              = "karpenter.sh/nodepool"
	TagNodeClaim             = "karpenter.sh/nodeclaim"
	TagNodeClass             = Group + "/ec2nodeclass"
	TagEKSClusterName        = "eks:eks-cluster-name"
	TagClusterPrefix         = "kubernetes.io/cluster/"
	TagName                  = "Name"
	TagManagedLaunchTemplate = Group + "/cluster"
)

// RestrictedTagKeys returns the exact tag keys users may not set; keys starting with TagClusterPrefix are
// restricted too.
func RestrictedTagKeys() []string {
	return []string{TagNodePool, TagNodeClaim, TagNodeClass, TagEKSClusterName}
}

// TerminationFinalizer is put on EC2NodeClasses; it is removed once their instance profiles and launch
// templates are cleaned up.
const TerminationFinalizer = Group + "/termination"
