package aws

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
)

// NodeClassHashVersion changes when the hash below changes meaning; NodeClaims with another version are not
// compared (they would all look drifted) but restamped. v2 (2026-11): spec.kubelet became an open map, hashed as
// its JSON with sorted keys and values as written; enclaveOptions added.
const NodeClassHashVersion = "v2"

// NodeClassHash hashes the EC2NodeClass fields that are fixed at launch and not re-resolved: user data, AMI
// family, tags, kubelet, block devices, metadata options, monitoring, public IP, instance store policy, context,
// enclave options, network interfaces, connection tracking, CPU options and the placement group selector
// (ipPrefixCount is left out, as Karpenter leaves it out). Subnet, security group and AMI selector terms are
// left out: their results are compared directly.
func NodeClassHash(nc *awsv1.EC2NodeClass) string {
	s := nc.Spec
	b, err := json.Marshal(struct {
		AMIFamily                *string
		UserData                 *string
		Tags                     map[string]string
		Kubelet                  string
		BlockDeviceMappings      []*awsv1.BlockDeviceMapping
		MetadataOptions          *awsv1.MetadataOptions
		DetailedMonitoring       *bool
		AssociatePublicIPAddress *bool
		InstanceStorePolicy      *awsv1.InstanceStorePolicy
		Context                  *string
		EnclaveOptions           *awsv1.EnclaveOptions
		// Added while no node could launch with them (they were refused until 2026-11-29): omitted when unset,
		// so the hashes of node classes without them did not change.
		NetworkInterfaces      []awsv1.NetworkInterface          `json:",omitempty"`
		ConnectionTracking     *awsv1.ConnectionTracking         `json:",omitempty"`
		CPUOptions             *awsv1.CPUOptions                 `json:",omitempty"`
		PlacementGroupSelector *awsv1.PlacementGroupSelectorTerm `json:",omitempty"`
	}{s.AMIFamily, s.UserData, s.Tags, s.Kubelet.String(), s.BlockDeviceMappings, s.MetadataOptions, s.DetailedMonitoring,
		s.AssociatePublicIPAddress, s.InstanceStorePolicy, s.Context, s.EnclaveOptions,
		s.NetworkInterfaces, s.ConnectionTracking, s.CPUOptions, s.PlacementGroupSelector})
	if err != nil {
		// Every field is plain data; Marshal cannot fail on them.
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// NodeClassStamp returns the class's hash and NodeClassHashVersion (the node class hash controller's Hasher).
func (p *CloudProvider) NodeClassStamp(nc *awsv1.EC2NodeClass) (string, string) {
	return NodeClassHash(nc), NodeClassHashVersion
}
