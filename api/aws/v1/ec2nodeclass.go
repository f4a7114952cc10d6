package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EC2NodeClass describes how Dovetail launches EC2 instances for the NodePools that reference it.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=ec2nodeclasses,scope=Cluster,categories=karpenter,shortName={ec2nc,ec2ncs}
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description="Whether subnets, security groups, AMIs and the instance profile were resolved"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Role",type="string",JSONPath=".spec.role",priority=1,description="IAM role of the nodes"
type EC2NodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   EC2NodeClassSpec   `json:"spec"`
	Status EC2NodeClassStatus `json:"status,omitempty"`
}

// EC2NodeClassList is a list of EC2NodeClasses.
// +kubebuilder:object:root=true
type EC2NodeClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EC2NodeClass `json:"items"`
}

// EC2NodeClassSpec is the desired launch configuration.
// +kubebuilder:validation:XValidation:rule="has(self.role) != has(self.instanceProfile)",message="spec: exactly one of role or instanceProfile must be set"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.role) && has(self.role)) || (has(oldSelf.instanceProfile) && has(self.instanceProfile))",message="spec: switching between role and instanceProfile is not supported; create a new EC2NodeClass instead"
// +kubebuilder:validation:XValidation:rule="has(self.amiFamily) || self.amiSelectorTerms.exists(x, has(x.alias))",message="spec.amiFamily is required when spec.amiSelectorTerms has no alias term"
// +kubebuilder:validation:XValidation:rule="!has(self.amiFamily) || !self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.split('@')[0] == 'al2') || self.amiFamily in ['AL2', 'Custom']",message="spec.amiFamily must be AL2 or Custom when spec.amiSelectorTerms uses a al2 alias"
// +kubebuilder:validation:XValidation:rule="!has(self.amiFamily) || !self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.split('@')[0] == 'al2023') || self.amiFamily in ['AL2023', 'Custom']",message="spec.amiFamily must be AL2023 or Custom when spec.amiSelectorTerms uses a al2023 alias"
// +kubebuilder:validation:XValidation:rule="!has(self.amiFamily) || !self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.split('@')[0] == 'bottlerocket') || self.amiFamily in ['Bottlerocket', 'Custom']",message="spec.amiFamily must be Bottlerocket or Custom when spec.amiSelectorTerms uses a bottlerocket alias"
// +kubebuilder:validation:XValidation:rule="!has(self.amiFamily) || !self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.split('@')[0] == 'windows2019') || self.amiFamily in ['Windows2019', 'Custom']",message="spec.amiFamily must be Windows2019 or Custom when spec.amiSelectorTerms uses a windows2019 alias"
// +kubebuilder:validation:XValidation:rule="!has(self.amiFamily) || !self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.split('@')[0] == 'windows2022') || self.amiFamily in ['Windows2022', 'Custom']",message="spec.amiFamily must be Windows2022 or Custom when spec.amiSelectorTerms uses a windows2022 alias"
// +kubebuilder:validation:XValidation:rule="!has(self.amiFamily) || !self.amiSelectorTerms.exists(x, has(x.alias) && x.alias.split('@')[0] == 'windows2025') || self.amiFamily in ['Windows2025', 'Custom']",message="spec.amiFamily must be Windows2025 or Custom when spec.amiSelectorTerms uses a windows2025 alias"
type EC2NodeClassSpec struct {
	// SubnetSelectorTerms select the subnets instances may be launched into; a subnet matching any term is used.
	// +kubebuilder:validation:XValidation:rule="self.all(x, has(x.tags) || has(x.id))",message="spec.subnetSelectorTerms: each term must set tags or id"
	// +kubebuilder:validation:XValidation:rule="!self.all(x, has(x.id) && has(x.tags))",message="spec.subnetSelectorTerms: a term with id may not also set tags (refused when every term does, as Karpenter judges it)"
	// +kubebuilder:validation:MinItems:=1
	// +kubebuilder:validation:MaxItems:=30
	// +required
	SubnetSelectorTerms []SubnetSelectorTerm `json:"subnetSelectorTerms"`
	// SecurityGroupSelectorTerms select the security groups of the instances; groups matching any term are used.
	// +kubebuilder:validation:XValidation:rule="self.all(x, has(x.tags) || has(x.id) || has(x.name))",message="spec.securityGroupSelectorTerms: each term must set tags, id or name"
	// +kubebuilder:validation:XValidation:rule="!self.all(x, has(x.id) && (has(x.tags) || has(x.name)))",message="spec.securityGroupSelectorTerms: a term with id may not also set tags or name (refused when every term does, as Karpenter judges it)"
	// +kubebuilder:validation:XValidation:rule="!self.all(x, has(x.name) && (has(x.tags) || has(x.id)))",message="spec.securityGroupSelectorTerms: a term with name may not also set tags or id (refused when every term does, as Karpenter judges it)"
	// +kubebuilder:validation:MinItems:=1
	// +kubebuilder:validation:MaxItems:=30
	// +required
	SecurityGroupSelectorTerms []SecurityGroupSelectorTerm `json:"securityGroupSelectorTerms"`
	// CapacityReservationSelectorTerms select on-demand capacity reservations the nodes may use.
	// +kubebuilder:validation:XValidation:rule="self.all(x, has(x.tags) || has(x.id) || has(x.instanceMatchCriteria))",message="spec.capacityReservationSelectorTerms: each term must set tags, id or instanceMatchCriteria"
	// +kubebuilder:validation:XValidation:rule="!self.all(x, has(x.id) && (has(x.tags) || has(x.ownerID) || has(x.instanceMatchCriteria)))",message="spec.capacityReservationSelectorTerms: a term with id may not also set tags, ownerID or instanceMatchCriteria (refused when every term does, as Karpenter judges it)"
	// +kubebuilder:validation:MaxItems:=30
	// +optional
	CapacityReservationSelectorTerms []CapacityReservationSelectorTerm `json:"capacityReservationSelectorTerms,omitempty"`
	// AssociatePublicIPAddress overrides the subnet's public IP assignment for the primary interface.
	// +optional
	AssociatePublicIPAddress *bool `json:"associatePublicIPAddress,omitempty"`
	// AMISelectorTerms select the AMIs; either one alias term (family@version) or terms by id, name, tags,
	// owner or SSM parameter.
	// +kubebuilder:validation:XValidation:rule="self.all(x, has(x.tags) || has(x.id) || has(x.name) || has(x.alias) || has(x.ssmParameter))",message="spec.amiSelectorTerms: each term must set one of alias, id, name, tags or ssmParameter"
	// +kubebuilder:validation:XValidation:rule="!self.exists(x, has(x.id) && (has(x.alias) || has(x.tags) || has(x.name) || has(x.owner)))",message="spec.amiSelectorTerms: a term with id may not also set alias, tags, name or owner"
	// +kubebuilder:validation:XValidation:rule="!self.exists(x, has(x.alias) && (has(x.id) || has(x.tags) || has(x.name) || has(x.owner)))",message="spec.amiSelectorTerms: a term with alias may not also set id, tags, name or owner"
	// +kubebuilder:validation:XValidation:rule="!(self.exists(x, has(x.alias)) && self.size() != 1)",message="spec.amiSelectorTerms: an alias term must be the only term"
	// +kubebuilder:validation:MinItems:=1
	// +kubebuilder:validation:MaxItems:=30
	// +required
	AMISelectorTerms []AMISelectorTerm `json:"amiSelectorTerms"`
	// AMIFamily selects the bootstrap format and default block devices; derived from the alias when unset.
	// +kubebuilder:validation:Enum:={AL2,AL2023,Bottlerocket,Custom,Windows2019,Windows2022,Windows2025}
	// +optional
	AMIFamily *string `json:"amiFamily,omitempty"`
	// UserData is merged with the bootstrap configuration Dovetail generates (MIME parts for AL2/AL2023,
	// TOML for Bottlerocket) or used as is for Custom.
	// +optional
	UserData *string `json:"userData,omitempty"`
	// Role is the IAM role name of the nodes; Dovetail manages an instance profile for it.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="spec.role may not be empty"
	// +optional
	Role string `json:"role,omitempty"`
	// InstanceProfile is an existing IAM instance profile, used instead of Role.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="spec.instanceProfile may not be empty"
	// +optional
	InstanceProfile *string `json:"instanceProfile,omitempty"`
	// Tags are added to instances, volumes, network interfaces and launch templates.
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '')",message="spec.tags: empty tag keys are not supported"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'eks:eks-cluster-name')",message="spec.tags: tag key \"eks:eks-cluster-name\" is restricted (set by Dovetail)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('kubernetes.io/cluster'))",message="spec.tags: tag keys starting with \"kubernetes.io/cluster\" are restricted (set by Dovetail)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'karpenter.sh/nodepool')",message="spec.tags: tag key \"karpenter.sh/nodepool\" is restricted (set by Dovetail)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'karpenter.sh/nodeclaim')",message="spec.tags: tag key \"karpenter.sh/nodeclaim\" is restricted (set by Dovetail)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != 'karpenter.k8s.aws/ec2nodeclass')",message="spec.tags: tag key \"karpenter.k8s.aws/ec2nodeclass\" is restricted (set by Dovetail)"
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// Kubelet overrides kubelet settings of the nodes: any field of the upstream KubeletConfiguration
	// (kubelet.config.k8s.io/v1beta1) by its JSON name. The API server accepts any object, as Karpenter v1.15's
	// does; Dovetail checks it and reports a refused configuration as ValidationSucceeded=False.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Kubelet KubeletConfiguration `json:"kubelet,omitempty"`
	// BlockDeviceMappings replace the AMI family's default volumes.
	// +kubebuilder:validation:XValidation:rule="self.filter(x, has(x.rootVolume) && x.rootVolume).size() <= 1",message="spec.blockDeviceMappings: at most one mapping may set rootVolume: true"
	// +kubebuilder:validation:MaxItems:=50
	// +optional
	BlockDeviceMappings []*BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	// InstanceStorePolicy says how local NVMe instance storage is used; RAID0 makes it the node's ephemeral
	// storage.
	// +optional
	InstanceStorePolicy *InstanceStorePolicy `json:"instanceStorePolicy,omitempty"`
	// DetailedMonitoring enables one-minute CloudWatch monitoring of the instances.
	// +optional
	DetailedMonitoring *bool `json:"detailedMonitoring,omitempty"`
	// MetadataOptions configure the instance metadata service.
	// +kubebuilder:default:={"httpEndpoint":"enabled","httpProtocolIPv6":"disabled","httpPutResponseHopLimit":1,"httpTokens":"required"}
	// +optional
	MetadataOptions *MetadataOptions `json:"metadataOptions,omitempty"`
	// Context is the launch context passed to CreateFleet (for reserved capacity or Outposts).
	// +optional
	Context *string `json:"context,omitempty"`
	// ConnectionTracking sets idle timeouts of the instances' connection tracking.
	// +kubebuilder:validation:XValidation:rule="has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)",message="spec.connectionTracking: set at least one of tcpEstablishedTimeout, udpStreamTimeout or udpTimeout"
	// +optional
	ConnectionTracking *ConnectionTracking `json:"connectionTracking,omitempty"`
	// CPUOptions set CPU features of the instances.
	// +optional
	CPUOptions *CPUOptions `json:"cpuOptions,omitempty"`
	// IPPrefixCount is the number of IPv4 /28 prefixes assigned to the primary network interface.
	// +kubebuilder:validation:Minimum:=0
	// +optional
	IPPrefixCount *int32 `json:"ipPrefixCount,omitempty"`
	// NetworkInterfaces describe the instances' network interfaces; unset means one interface at index 0.
	// +kubebuilder:validation:XValidation:rule="self.all(x, self.exists_one(y, y.networkCardIndex == x.networkCardIndex && y.deviceIndex == x.deviceIndex))",message="spec.networkInterfaces: each (networkCardIndex, deviceIndex) pair must be unique"
	// +kubebuilder:validation:XValidation:rule="self.size() == 0 || self.exists(x, x.networkCardIndex == 0 && x.deviceIndex == 0 && x.interfaceType == 'interface')",message="spec.networkInterfaces: a primary interface (networkCardIndex 0, deviceIndex 0) with interfaceType interface is required"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.interfaceType != 'efa-only' || self.filter(y, y.networkCardIndex == x.networkCardIndex && y.interfaceType == 'efa-only').size() == 1)",message="spec.networkInterfaces: at most one efa-only interface per network card"
	// +kubebuilder:validation:MaxItems:=150
	// +optional
	NetworkInterfaces []NetworkInterface `json:"networkInterfaces,omitempty"`
	// EnclaveOptions enable AWS Nitro Enclaves on the instances; unset or enabled: false leaves them off.
	// +optional
	EnclaveOptions *EnclaveOptions `json:"enclaveOptions,omitempty"`
	// PlacementGroupSelector selects an existing placement group by id or name.
	// +kubebuilder:validation:XValidation:rule="has(self.id) != has(self.name)",message="spec.placementGroupSelector: exactly one of id or name must be set"
	// +optional
	PlacementGroupSelector *PlacementGroupSelectorTerm `json:"placementGroupSelector,omitempty"`
}

// SubnetSelectorTerm selects subnets by tags or by id.
type SubnetSelectorTerm struct {
	// Tags the subnet must carry; "*" matches any value.
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '' && self[k] != '')",message="subnetSelectorTerms.tags: empty tag keys or values are not supported"
	// +kubebuilder:validation:MaxProperties:=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of the subnet.
	// +kubebuilder:validation:Pattern:="^subnet-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
}

// SecurityGroupSelectorTerm selects security groups by tags, id or name.
type SecurityGroupSelectorTerm struct {
	// Tags the security group must carry; "*" matches any value.
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '' && self[k] != '')",message="securityGroupSelectorTerms.tags: empty tag keys or values are not supported"
	// +kubebuilder:validation:MaxProperties:=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of the security group.
	// +kubebuilder:validation:Pattern:="^sg-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
	// Name of the security group (its GroupName).
	// +optional
	Name string `json:"name,omitempty"`
}

// CapacityReservationSelectorTerm selects capacity reservations by tags, id, owner or match criteria.
type CapacityReservationSelectorTerm struct {
	// Tags the reservation must carry; "*" matches any value.
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '' && self[k] != '')",message="capacityReservationSelectorTerms.tags: empty tag keys or values are not supported"
	// +kubebuilder:validation:MaxProperties:=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of the capacity reservation.
	// +kubebuilder:validation:Pattern:="^cr-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
	// OwnerID is the AWS account that owns the reservation.
	// +kubebuilder:validation:Pattern:="^[0-9]{12}$"
	// +optional
	OwnerID string `json:"ownerID,omitempty"`
	// InstanceMatchCriteria selects reservations by how they accept instances: open or targeted.
	// +kubebuilder:validation:Enum:={open,targeted}
	// +optional
	InstanceMatchCriteria string `json:"instanceMatchCriteria,omitempty"`
}

// AMISelectorTerm selects AMIs.
type AMISelectorTerm struct {
	// Alias selects the EKS-optimized AMI of a family at a version: family@version, e.g. al2023@latest,
	// al2023@v20240807, bottlerocket@v1.20.0 or bottlerocket@1.20.0. Windows families accept only "latest".
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-zA-Z0-9]+@.+$')",message="amiSelectorTerms.alias must have the form family@version, e.g. al2023@latest"
	// +kubebuilder:validation:XValidation:rule="self.split('@')[0] in ['al2','al2023','bottlerocket','windows2019','windows2022','windows2025']",message="amiSelectorTerms.alias family must be one of al2, al2023, bottlerocket, windows2019, windows2022, windows2025"
	// +kubebuilder:validation:XValidation:rule="self.split('@')[0] in ['windows2019','windows2022','windows2025'] ? self.split('@')[1] == 'latest' : true",message="amiSelectorTerms.alias: windows families only support the version latest"
	// +kubebuilder:validation:MaxLength:=30
	// +optional
	Alias string `json:"alias,omitempty"`
	// Tags the AMI must carry; "*" matches any value.
	// +kubebuilder:validation:XValidation:rule="self.all(k, k != '' && self[k] != '')",message="amiSelectorTerms.tags: empty tag keys or values are not supported"
	// +kubebuilder:validation:MaxProperties:=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// ID of the AMI.
	// +kubebuilder:validation:Pattern:="^ami-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
	// Name of the AMI; wildcards allowed.
	// +optional
	Name string `json:"name,omitempty"`
	// Owner of the AMI: an account id or an alias such as amazon or self.
	// +optional
	Owner string `json:"owner,omitempty"`
	// SSMParameter is an SSM parameter name or ARN whose value is an AMI id. Next to id or alias it is not
	// used (as in Karpenter, id and alias win).
	// +optional
	SSMParameter string `json:"ssmParameter,omitempty"`
}

// EnclaveOptions enable AWS Nitro Enclaves on the instances.
type EnclaveOptions struct {
	// Enabled turns Nitro Enclaves on; then only instance types that support them are launched.
	// +required
	Enabled bool `json:"enabled"`
}

// MetadataOptions configure the EC2 instance metadata service.
type MetadataOptions struct {
	// HTTPEndpoint enables or disables the metadata endpoint.
	// +kubebuilder:default:="enabled"
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	HTTPEndpoint *string `json:"httpEndpoint,omitempty"`
	// HTTPProtocolIPv6 enables or disables the IPv6 metadata endpoint.
	// +kubebuilder:default:="disabled"
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	HTTPProtocolIPv6 *string `json:"httpProtocolIPv6,omitempty"`
	// HTTPPutResponseHopLimit is the hop limit of metadata PUT responses (1 keeps them on the instance).
	// +kubebuilder:default:=1
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:validation:Maximum:=64
	// +optional
	HTTPPutResponseHopLimit *int64 `json:"httpPutResponseHopLimit,omitempty"`
	// HTTPTokens says whether IMDSv2 session tokens are required or optional.
	// +kubebuilder:default:="required"
	// +kubebuilder:validation:Enum:={required,optional}
	// +optional
	HTTPTokens *string `json:"httpTokens,omitempty"`
}

// BlockDeviceMapping attaches an EBS volume at a device name.
type BlockDeviceMapping struct {
	// DeviceName is the device the volume is attached at, e.g. /dev/xvda.
	// +optional
	DeviceName *string `json:"deviceName,omitempty"`
	// EBS describes the volume.
	// +optional
	EBS *BlockDevice `json:"ebs,omitempty"`
	// RootVolume marks the volume the node uses as its root (and ephemeral storage) volume.
	// +optional
	RootVolume bool `json:"rootVolume,omitempty"`
}

// BlockDevice describes an EBS volume.
// +kubebuilder:validation:XValidation:rule="has(self.snapshotID) || has(self.volumeSize)",message="ebs: snapshotID or volumeSize must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.volumeInitializationRate) || (has(self.snapshotID) && size(self.snapshotID) > 0)",message="ebs: volumeInitializationRate requires snapshotID"
type BlockDevice struct {
	// DeleteOnTermination deletes the volume when the instance terminates.
	// +optional
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`
	// Encrypted encrypts the volume.
	// +optional
	Encrypted *bool `json:"encrypted,omitempty"`
	// IOPS of io1, io2 and gp3 volumes.
	// +optional
	IOPS *int64 `json:"iops,omitempty"`
	// KMSKeyID is the KMS key encrypting the volume.
	// +optional
	KMSKeyID *string `json:"kmsKeyID,omitempty"`
	// SnapshotID is the snapshot the volume is created from.
	// +optional
	SnapshotID *string `json:"snapshotID,omitempty"`
	// Throughput (MiB/s) of gp3 volumes.
	// +optional
	Throughput *int64 `json:"throughput,omitempty"`
	// VolumeInitializationRate (MiB/s) at which a volume created from a snapshot is initialized.
	// +kubebuilder:validation:Minimum:=100
	// +kubebuilder:validation:Maximum:=300
	// +optional
	VolumeInitializationRate *int32 `json:"volumeInitializationRate,omitempty"`
	// VolumeSize is the size of the volume, a quantity such as 20Gi (at most 64Ti).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern:="^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$"
	// +optional
	VolumeSize *resource.Quantity `json:"volumeSize,omitempty"`
	// VolumeType is the EBS volume type.
	// +kubebuilder:validation:Enum:={standard,io1,io2,gp2,sc1,st1,gp3}
	// +optional
	VolumeType *string `json:"volumeType,omitempty"`
}

// InstanceStorePolicy says how instance store volumes are used.
// +kubebuilder:validation:Enum:={RAID0}
type InstanceStorePolicy string

// InstanceStorePolicyRAID0 combines instance store volumes into a RAID0 array used for ephemeral storage.
const InstanceStorePolicyRAID0 InstanceStorePolicy = "RAID0"

// ConnectionTracking sets connection tracking idle timeouts (seconds) of the instances' interfaces.
type ConnectionTracking struct {
	// TCPEstablishedTimeout for established TCP connections, 60..432000 seconds.
	// +kubebuilder:validation:Minimum:=60
	// +kubebuilder:validation:Maximum:=432000
	// +optional
	TCPEstablishedTimeout *int32 `json:"tcpEstablishedTimeout,omitempty"`
	// UDPStreamTimeout for UDP flows seen in both directions, 60..180 seconds.
	// +kubebuilder:validation:Minimum:=60
	// +kubebuilder:validation:Maximum:=180
	// +optional
	UDPStreamTimeout *int32 `json:"udpStreamTimeout,omitempty"`
	// UDPTimeout for UDP flows seen in one direction, 30..60 seconds.
	// +kubebuilder:validation:Minimum:=30
	// +kubebuilder:validation:Maximum:=60
	// +optional
	UDPTimeout *int32 `json:"udpTimeout,omitempty"`
}

// CPUOptions set CPU features of the instances.
type CPUOptions struct {
	// NestedVirtualization enables or disables nested virtualization where supported.
	// +kubebuilder:validation:Enum:={enabled,disabled}
	// +optional
	NestedVirtualization *string `json:"nestedVirtualization,omitempty"`
}

// NetworkInterface describes one network interface of the instances.
type NetworkInterface struct {
	// NetworkCardIndex of the interface.
	// +kubebuilder:validation:Minimum:=0
	// +required
	NetworkCardIndex int32 `json:"networkCardIndex"`
	// DeviceIndex of the interface on its network card.
	// +kubebuilder:validation:Minimum:=0
	// +required
	DeviceIndex int32 `json:"deviceIndex"`
	// InterfaceType is interface (ENA) or efa-only.
	// +kubebuilder:validation:Enum:={interface,efa-only}
	// +required
	InterfaceType string `json:"interfaceType"`
}

// Network interface types of spec.networkInterfaces.
const (
	// InterfaceTypeInterface is an ENA interface carrying IP traffic.
	InterfaceTypeInterface = "interface"
	// InterfaceTypeEFAOnly is an Elastic Fabric Adapter without IP networking.
	InterfaceTypeEFAOnly = "efa-only"
)

// PlacementGroupSelectorTerm selects a placement group by id or by name.
type PlacementGroupSelectorTerm struct {
	// ID of the placement group.
	// +kubebuilder:validation:Pattern:="^pg-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
	// Name of the placement group.
	// +kubebuilder:validation:MinLength:=1
	// +kubebuilder:validation:MaxLength:=255
	// +optional
	Name string `json:"name,omitempty"`
}

// EC2NodeClassStatus is what Dovetail resolved from the spec.
type EC2NodeClassStatus struct {
	// Subnets resolved from SubnetSelectorTerms.
	// +optional
	Subnets []Subnet `json:"subnets,omitempty"`
	// SecurityGroups resolved from SecurityGroupSelectorTerms.
	// +optional
	SecurityGroups []SecurityGroup `json:"securityGroups,omitempty"`
	// CapacityReservations resolved from CapacityReservationSelectorTerms.
	// +optional
	CapacityReservations []CapacityReservation `json:"capacityReservations,omitempty"`
	// AMIs resolved from AMISelectorTerms, with the requirements each one satisfies.
	// +optional
	AMIs []AMI `json:"amis,omitempty"`
	// InstanceProfile is the instance profile Dovetail uses (created for Role, or InstanceProfile).
	// +optional
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// Conditions are the EC2NodeClass's status conditions; Ready is the root condition.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Subnet is a resolved subnet.
type Subnet struct {
	// ID of the subnet.
	// +required
	ID string `json:"id"`
	// Zone of the subnet, e.g. us-west-2a.
	// +required
	Zone string `json:"zone"`
	// ZoneID of the subnet, e.g. usw2-az1.
	// +optional
	ZoneID string `json:"zoneID,omitempty"`
}

// SecurityGroup is a resolved security group.
type SecurityGroup struct {
	// ID of the security group.
	// +required
	ID string `json:"id"`
	// Name of the security group.
	// +optional
	Name string `json:"name,omitempty"`
}

// AMI is a resolved image and the node requirements (architecture, GPU, ...) it serves.
type AMI struct {
	// ID of the AMI.
	// +required
	ID string `json:"id"`
	// Name of the AMI.
	// +optional
	Name string `json:"name,omitempty"`
	// Requirements an instance type must meet to use this AMI.
	// +required
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
	// Deprecated is true when the AMI is past its deprecation time.
	// +optional
	Deprecated bool `json:"deprecated,omitempty"`
}

// CapacityReservation is a resolved capacity reservation.
type CapacityReservation struct {
	// ID of the reservation.
	// +required
	ID string `json:"id"`
	// AvailabilityZone of the reservation.
	// +required
	AvailabilityZone string `json:"availabilityZone"`
	// InstanceType reserved.
	// +required
	InstanceType string `json:"instanceType"`
	// InstanceMatchCriteria of the reservation: open or targeted.
	// +optional
	InstanceMatchCriteria string `json:"instanceMatchCriteria,omitempty"`
	// OwnerID is the account owning the reservation.
	// +required
	OwnerID string `json:"ownerID"`
	// ReservationType is default or capacity-block.
	// +kubebuilder:validation:Enum:={default,capacity-block}
	// +kubebuilder:default:="default"
	// +optional
	ReservationType CapacityReservationType `json:"reservationType,omitempty"`
	// State of the reservation: active or expiring.
	// +kubebuilder:validation:Enum:={active,expiring}
	// +kubebuilder:default:="active"
	// +optional
	State CapacityReservationState `json:"state,omitempty"`
	// EndTime is when the reservation ends, if it does.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`
	// Interruptible is true for reservations whose capacity may be reclaimed.
	// +optional
	Interruptible bool `json:"interruptible,omitempty"`
}

// CapacityReservationType is the kind of a capacity reservation.
type CapacityReservationType string

// Capacity reservation types.
const (
	CapacityReservationTypeDefault       CapacityReservationType = "default"
	CapacityReservationTypeCapacityBlock CapacityReservationType = "capacity-block"
)

// CapacityReservationState is the state of a capacity reservation.
type CapacityReservationState string

// Capacity reservation states.
const (
	CapacityReservationStateActive   CapacityReservationState = "active"
	CapacityReservationStateExpiring CapacityReservationState = "expiring"
)
