package api_test

import "testing"

const ec2NodeClassBase = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: base}
spec:
  role: KarpenterNodeRole-test
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: test}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: test}}]
`

// ec2NodeClassSpecExample is the EC2NodeClass of the compatibility spec (§12), applied unchanged.
const ec2NodeClassSpecExample = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: default}
spec:
  role: KarpenterNodeRole-my-cluster
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: my-cluster}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: my-cluster}}]
`

// ec2NodeClassDocsStyle sets most fields the way Karpenter's documentation shows them.
const ec2NodeClassDocsStyle = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: docs-style
spec:
  kubelet:
    podsPerCore: 2
    maxPods: 20
    systemReserved:
      cpu: 100m
      memory: 100Mi
      ephemeral-storage: 1Gi
    kubeReserved:
      cpu: 200m
      memory: 100Mi
      ephemeral-storage: 3Gi
    evictionHard:
      memory.available: 5%
      nodefs.available: 10%
      nodefs.inodesFree: 10%
    evictionSoft:
      memory.available: 500Mi
      nodefs.available: 15%
      nodefs.inodesFree: 15%
    evictionSoftGracePeriod:
      memory.available: 1m
      nodefs.available: 1m30s
      nodefs.inodesFree: 2m
    evictionMaxPodGracePeriod: 60
    imageGCHighThresholdPercent: 85
    imageGCLowThresholdPercent: 80
    cpuCFSQuota: true
    clusterDNS: ["10.0.1.100"]
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: "my-cluster"
    - id: subnet-09fa4a0a8f233a921
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: "my-cluster"
    - name: my-security-group
    - id: sg-063d7acfb4b06c82c
  capacityReservationSelectorTerms:
    - tags:
        karpenter.sh/discovery: "my-cluster"
    - id: cr-123
  role: "KarpenterNodeRole-my-cluster"
  amiFamily: AL2023
  amiSelectorTerms:
    - tags:
        karpenter.sh/discovery: "my-cluster"
        environment: test
    - name: my-ami
    - id: ami-123
    - ssmParameter: my-custom-parameter
  associatePublicIPAddress: true
  tags:
    team: team-a
    app: team-a-app
  metadataOptions:
    httpEndpoint: enabled
    httpProtocolIPv6: disabled
    httpPutResponseHopLimit: 1
    httpTokens: required
  blockDeviceMappings:
    - deviceName: /dev/xvda
      ebs:
        volumeSize: 100Gi
        volumeType: gp3
        iops: 10000
        encrypted: true
        kmsKeyID: "1234abcd-12ab-34cd-56ef-1234567890ab"
        deleteOnTermination: true
        throughput: 125
        snapshotID: snap-0123456789
        volumeInitializationRate: 100
      rootVolume: true
  instanceStorePolicy: RAID0
  userData: |
    echo "Hello world"
  detailedMonitoring: true
`

func ec2NodeClassCases() []validationCase {
	b := ec2NodeClassBase
	return []validationCase{
		// Accepted.
		{name: "spec example", base: ec2NodeClassSpecExample},
		{name: "docs style", base: ec2NodeClassDocsStyle},
		{name: "instance profile instead of role", base: b, patch: `spec: {role: null, instanceProfile: KarpenterNodeInstanceProfile}`},
		{name: "pinned al2023 alias", base: b, patch: `spec: {amiSelectorTerms: [{alias: al2023@v20240807}]}`},
		{name: "pinned bottlerocket alias", base: b, patch: `spec: {amiSelectorTerms: [{alias: bottlerocket@v1.20.0}]}`},
		{name: "windows alias latest", base: b, patch: `spec: {amiSelectorTerms: [{alias: windows2022@latest}]}`},
		{name: "custom family with alias", base: b, patch: `spec: {amiFamily: Custom, amiSelectorTerms: [{alias: al2@latest}]}`},
		{name: "matching family with alias", base: b, patch: `spec: {amiFamily: AL2023}`},
		{name: "ami by name and owner", base: b, patch: `spec: {amiFamily: Bottlerocket, amiSelectorTerms: [{name: "bottlerocket-*", owner: amazon}, {tags: {team: a}, owner: "123456789012"}]}`},
		{name: "selector terms by id", base: b, patch: `spec: {subnetSelectorTerms: [{id: subnet-0a1b2c}, {id: subnet-0d3e4f}], securityGroupSelectorTerms: [{id: sg-0a1b2c}]}`},
		{name: "v1.14 fields", base: b, patch: `
spec:
  capacityReservationSelectorTerms: [{instanceMatchCriteria: open}, {ownerID: "123456789012", tags: {team: a}}]
  connectionTracking: {tcpEstablishedTimeout: 3600, udpStreamTimeout: 120, udpTimeout: 30}
  cpuOptions: {nestedVirtualization: enabled}
  ipPrefixCount: 2
  networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}]
  placementGroupSelector: {name: my-placement-group}`},
		{name: "kubelet eviction soft with grace periods", base: b, patch: `spec: {kubelet: {evictionSoft: {memory.available: 10%}, evictionSoftGracePeriod: {memory.available: 2m}}}`},
		{name: "two block devices one root", base: b, patch: `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 20Gi, volumeType: gp3}, rootVolume: true}, {deviceName: /dev/xvdb, ebs: {volumeSize: 1Ti, volumeType: io2, iops: 3000}}]}`},
		{name: "user tags", base: b, patch: `spec: {tags: {Name: custom, example.com/cost-center: "42", kubernetes.io/role: x}}`},
		{name: "update to another role", base: b, update: `spec: {role: OtherRole}`},
		{name: "context and monitoring", base: b, patch: `spec: {context: lt-context, detailedMonitoring: false, associatePublicIPAddress: false}`},
		{name: "bottlerocket with toml user data", base: b, patch: `
spec:
  amiSelectorTerms: [{alias: bottlerocket@latest}]
  userData: |
    [settings.kubernetes]
    max-pods = 110
  blockDeviceMappings:
    - {deviceName: /dev/xvda, ebs: {volumeSize: 4Gi, volumeType: gp3, encrypted: true}}
    - {deviceName: /dev/xvdb, ebs: {volumeSize: 20Gi, volumeType: gp3, encrypted: true}, rootVolume: true}`},
		{name: "windows2019 alias", base: b, patch: `spec: {amiSelectorTerms: [{alias: windows2019@latest}]}`},
		{name: "instance profile update keeps instance profile", base: b, patch: `spec: {role: null, instanceProfile: ProfileA}`, update: `spec: {instanceProfile: ProfileB}`},
		{name: "custom family with ssm parameter", base: b, patch: `spec: {amiFamily: Custom, amiSelectorTerms: [{ssmParameter: /my/ami/id}]}`},

		// Rejected.
		{name: "role and instanceProfile", base: b, patch: `spec: {instanceProfile: KarpenterNodeInstanceProfile}`, want: "exactly one of role or instanceProfile must be set"},
		{name: "neither role nor instanceProfile", base: b, patch: `spec: {role: null}`, want: "exactly one of role or instanceProfile must be set"},
		{name: "empty role", base: b, patch: `spec: {role: ""}`, want: "spec.role may not be empty"},
		{name: "update role to instanceProfile", base: b, update: `spec: {role: null, instanceProfile: KarpenterNodeInstanceProfile}`, want: "switching between role and instanceProfile is not supported"},
		{name: "alias without version", base: b, patch: `spec: {amiSelectorTerms: [{alias: al2023}]}`, want: "alias must have the form family@version"},
		{name: "alias unknown family", base: b, patch: `spec: {amiSelectorTerms: [{alias: ubuntu@latest}]}`, want: "alias family must be one of al2, al2023, bottlerocket, windows2019, windows2022"},
		{name: "alias windows pinned", base: b, patch: `spec: {amiSelectorTerms: [{alias: windows2019@v20240101}]}`, want: "windows families only support the version latest"},
		{name: "alias any version text (Karpenter does not check it at admission)", base: b, patch: `spec: {amiSelectorTerms: [{alias: al2023@newest}]}`},
		{name: "alias with another term", base: b, patch: `spec: {amiSelectorTerms: [{alias: al2023@latest}, {id: ami-123}]}`, want: "an alias term must be the only term"},
		{name: "alias with id in one term", base: b, patch: `spec: {amiSelectorTerms: [{alias: al2023@latest, id: ami-123}]}`, want: "a term with alias may not also set"},
		{name: "ami id with tags", base: b, patch: `spec: {amiFamily: AL2023, amiSelectorTerms: [{id: ami-123, tags: {a: b}}]}`, want: "a term with id may not also set"},
		{name: "ami term empty", base: b, patch: `spec: {amiFamily: AL2023, amiSelectorTerms: [{}]}`, want: "each term must set one of alias, id, name, tags or ssmParameter"},
		{name: "no ami terms", base: b, patch: `spec: {amiFamily: AL2023, amiSelectorTerms: []}`, want: "spec.amiSelectorTerms in body should have at least 1 items"},
		{name: "amiFamily missing without alias", base: b, patch: `spec: {amiSelectorTerms: [{id: ami-123}]}`, want: "spec.amiFamily is required when spec.amiSelectorTerms has no alias term"},
		{name: "amiFamily contradicts alias", base: b, patch: `spec: {amiFamily: AL2}`, want: "spec.amiFamily must be AL2023 or Custom"},
		{name: "amiFamily unknown", base: b, patch: `spec: {amiFamily: Ubuntu}`, want: `Unsupported value: "Ubuntu"`},
		{name: "no subnet terms", base: b, patch: `spec: {subnetSelectorTerms: []}`, want: "spec.subnetSelectorTerms in body should have at least 1 items"},
		{name: "subnet terms missing", base: b, patch: `spec: {subnetSelectorTerms: null}`, want: "spec.subnetSelectorTerms: Required value"},
		{name: "subnet term empty", base: b, patch: `spec: {subnetSelectorTerms: [{}]}`, want: "each term must set tags or id"},
		{name: "subnet id with tags", base: b, patch: `spec: {subnetSelectorTerms: [{id: subnet-123, tags: {a: b}}]}`, want: "a term with id may not also set tags"},
		{name: "subnet id malformed", base: b, patch: `spec: {subnetSelectorTerms: [{id: sg-123}]}`, want: "spec.subnetSelectorTerms[0].id in body should match"},
		{name: "subnet tag value empty", base: b, patch: `spec: {subnetSelectorTerms: [{tags: {karpenter.sh/discovery: ""}}]}`, want: "empty tag keys or values are not supported"},
		{name: "too many subnet terms", base: b, patch: `spec: {subnetSelectorTerms: [` + repeatTerm(`{id: subnet-1}`, 31) + `]}`, want: "must have at most 30 items"},
		{name: "security group id with name", base: b, patch: `spec: {securityGroupSelectorTerms: [{id: sg-123, name: web}]}`, want: "a term with id may not also set tags or name"},
		{name: "security group name with tags", base: b, patch: `spec: {securityGroupSelectorTerms: [{name: web, tags: {a: b}}]}`, want: "a term with name may not also set tags or id"},
		{name: "capacity reservation id with owner", base: b, patch: `spec: {capacityReservationSelectorTerms: [{id: cr-123, ownerID: "123456789012"}]}`, want: "a term with id may not also set tags, ownerID or instanceMatchCriteria"},
		{name: "tag kubernetes.io/cluster", base: b, patch: `spec: {tags: {kubernetes.io/cluster/my-cluster: owned}}`, want: `tag keys starting with "kubernetes.io/cluster" are restricted`},
		{name: "tag karpenter.sh/nodepool", base: b, patch: `spec: {tags: {karpenter.sh/nodepool: x}}`, want: `tag key "karpenter.sh/nodepool" is restricted`},
		{name: "tag karpenter.sh/nodeclaim", base: b, patch: `spec: {tags: {karpenter.sh/nodeclaim: x}}`, want: `tag key "karpenter.sh/nodeclaim" is restricted`},
		{name: "tag eks cluster name", base: b, patch: `spec: {tags: {eks:eks-cluster-name: x}}`, want: `tag key "eks:eks-cluster-name" is restricted`},
		{name: "tag ec2nodeclass", base: b, patch: `spec: {tags: {karpenter.k8s.aws/ec2nodeclass: x}}`, want: `tag key "karpenter.k8s.aws/ec2nodeclass" is restricted`},
		// Karpenter v1.14's schema refused these; v1.15's spec.kubelet is an open object and its controller refuses
		// them (ValidationSucceeded=False, InvalidKubeletConfiguration), as Dovetail's does: accepted at admission.
		{name: "kubelet reserved key (refused by the controller)", base: b, patch: `spec: {kubelet: {systemReserved: {gpu: "1"}}}`},
		{name: "kubelet reserved negative (refused by the controller)", base: b, patch: `spec: {kubelet: {kubeReserved: {cpu: "-1"}}}`},
		{name: "kubelet eviction signal (refused by the controller)", base: b, patch: `spec: {kubelet: {evictionHard: {memory.free: 5%}}}`},
		{name: "kubelet eviction value (refused by the controller)", base: b, patch: `spec: {kubelet: {evictionHard: {memory.available: lots}}}`},
		{name: "kubelet evictionSoft without grace period (refused by the controller)", base: b, patch: `spec: {kubelet: {evictionSoft: {memory.available: 10%}}}`},
		{name: "kubelet grace period without evictionSoft (refused by the controller)", base: b, patch: `spec: {kubelet: {evictionSoft: {memory.available: 10%}, evictionSoftGracePeriod: {memory.available: 1m, nodefs.available: 1m}}}`},
		{name: "kubelet image gc high not above low (refused by the controller)", base: b, patch: `spec: {kubelet: {imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 50}}`},
		{name: "kubelet image gc above 100 (refused by the controller)", base: b, patch: `spec: {kubelet: {imageGCHighThresholdPercent: 101}}`},
		{name: "two root volumes", base: b, patch: `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 20Gi}, rootVolume: true}, {deviceName: /dev/xvdb, ebs: {volumeSize: 20Gi}, rootVolume: true}]}`, want: "at most one mapping may set rootVolume: true"},
		{name: "volume type unknown", base: b, patch: `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 20Gi, volumeType: gp9}}]}`, want: `Unsupported value: "gp9"`},
		{name: "volume without size or snapshot", base: b, patch: `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeType: gp3}}]}`, want: "snapshotID or volumeSize must be set"},
		{name: "volume size too large", base: b, patch: `spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 100Ti}}]}`, want: "volumeSize in body should match"},
		{name: "httpTokens unknown", base: b, patch: `spec: {metadataOptions: {httpTokens: sometimes}}`, want: `Unsupported value: "sometimes"`},
		{name: "hop limit above 64", base: b, patch: `spec: {metadataOptions: {httpPutResponseHopLimit: 65}}`, want: "httpPutResponseHopLimit in body should be less than or equal to 64"},
		{name: "instanceStorePolicy unknown", base: b, patch: `spec: {instanceStorePolicy: RAID1}`, want: `Unsupported value: "RAID1"`},
		{name: "placement group id and name", base: b, patch: `spec: {placementGroupSelector: {id: pg-123, name: x}}`, want: "exactly one of id or name must be set"},
		{name: "network interface type unknown", base: b, patch: `spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: trunk}]}`, want: `Unsupported value: "trunk"`},
		{name: "network interface duplicate", base: b, patch: `spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 0, deviceIndex: 0, interfaceType: efa-only}]}`, want: "pair must be unique"},
		{name: "connection tracking udp timeout", base: b, patch: `spec: {connectionTracking: {udpTimeout: 10}}`, want: "udpTimeout in body should be greater than or equal to 30"},
	}
}

func repeatTerm(term string, n int) string {
	out := term
	for i := 1; i < n; i++ {
		out += ", " + term
	}
	return out
}

func TestEC2NodeClassValidation(t *testing.T) { runCases(t, ec2NodeClassCases()) }
