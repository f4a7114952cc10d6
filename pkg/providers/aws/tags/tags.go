package tags

import (
	"maps"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
)

// ClusterUID tags every resource with the identity of the Kubernetes cluster that created it (the kube-system
// namespace UID). The cluster name alone is not unique: two clusters sharing a name must never act on each
// other's instances.
const ClusterUID = "dovetail.sh/cluster-uid"

// Cluster identifies this cluster on AWS.
type Cluster struct {
	Name string
	// UID is unique per cluster (the kube-system namespace UID).
	UID string
}

// ClusterTag is the kubernetes.io/cluster/<name> tag key.
func (c Cluster) ClusterTag() string { return awsv1.TagClusterPrefix + c.Name }

// Base returns the tags every Dovetail-created resource carries: the cluster name tags and the cluster UID.
func (c Cluster) Base() map[string]string {
	return map[string]string{
		c.ClusterTag():          "owned",
		awsv1.TagEKSClusterName: c.Name,
		ClusterUID:              c.UID,
	}
}

// Ownership is what an object's tags say about who owns it.
type Ownership int

// Ownership values.
const (
	// Foreign objects carry no tag of this cluster's name.
	Foreign Ownership = iota
	// Owned objects carry this cluster's name tag and UID.
	Owned
	// NameOnly objects carry this cluster's name tag but no UID tag: made by an older controller or by hand.
	NameOnly
	// OtherCluster objects carry this cluster's name tag and another cluster's UID: a cluster sharing the name.
	OtherCluster
)

// Owner classifies an object by its tags.
func (c Cluster) Owner(t map[string]string) Ownership {
	if _, ok := t[c.ClusterTag()]; !ok {
		return Foreign
	}
	uid, ok := t[ClusterUID]
	switch {
	case !ok:
		return NameOnly
	case uid == c.UID:
		return Owned
	}
	return OtherCluster
}

// Instance identifies what an instance was launched for.
type Instance struct {
	NodePool  string
	NodeClaim string
	NodeClass string
	// NodeClassTags are the EC2NodeClass's spec.tags; Dovetail's own keys win over them.
	NodeClassTags map[string]string
}

// ForInstance returns the tags of an instance and its volumes: the node class's tags, then the cluster tags,
// karpenter.sh/nodepool, karpenter.sh/nodeclaim, karpenter.k8s.aws/ec2nodeclass and Name (the NodeClaim name until
// the node registers and the Name becomes the node name).
func (c Cluster) ForInstance(in Instance) map[string]string {
	out := map[string]string{awsv1.TagName: in.NodeClaim}
	maps.Copy(out, in.NodeClassTags)
	maps.Copy(out, c.Base())
	out[awsv1.TagNodePool] = in.NodePool
	out[awsv1.TagNodeClaim] = in.NodeClaim
	out[awsv1.TagNodeClass] = in.NodeClass
	return out
}

// ForNodeClassResource returns the tags of a launch template or instance profile made for a node class.
func (c Cluster) ForNodeClassResource(nodeClass string, extra map[string]string) map[string]string {
	out := map[string]string{}
	maps.Copy(out, extra)
	maps.Copy(out, c.Base())
	out[awsv1.TagManagedLaunchTemplate] = c.Name
	out[awsv1.TagNodeClass] = nodeClass
	return out
}
