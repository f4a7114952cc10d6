package api_test

import "testing"

const nodePoolBase = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: base}
spec:
  template:
    spec:
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: ["amd64"]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
`

// nodePoolSpecExample is the NodePool of the compatibility spec (§12), applied unchanged.
const nodePoolSpecExample = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      requirements:
        - {key: kubernetes.io/arch, operator: In, values: ["amd64"]}
        - {key: kubernetes.io/os, operator: In, values: ["linux"]}
        - {key: karpenter.sh/capacity-type, operator: In, values: ["spot", "on-demand"]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: ["c", "m", "r"], minValues: 2}
        - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["2"]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      expireAfter: 720h
  limits: {cpu: 1000}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
    budgets:
      - nodes: "10%"
      - {nodes: "0", schedule: "0 9 * * mon-fri", duration: 8h, reasons: ["Underutilized"]}
`

// nodePoolDocsStyle is a NodePool written the way Karpenter's documentation describes one, with most
// optional fields set.
const nodePoolDocsStyle = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: docs-style
spec:
  template:
    metadata:
      labels:
        billing-team: my-team
        example.com/tier: backend
      annotations:
        example.com/owner: "my-team"
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: default
      taints:
        - key: example.com/special-taint
          value: "true"
          effect: NoSchedule
      startupTaints:
        - key: example.com/another-taint
          effect: NoSchedule
      expireAfter: 720h
      terminationGracePeriod: 48h
      requirements:
        - key: "karpenter.k8s.aws/instance-category"
          operator: In
          values: ["c", "m", "r"]
          minValues: 2
        - key: "karpenter.k8s.aws/instance-family"
          operator: In
          values: ["m5", "m5d", "c5", "c5d", "c4", "r4"]
          minValues: 5
        - key: "karpenter.k8s.aws/instance-cpu"
          operator: In
          values: ["4", "8", "16", "32"]
        - key: "karpenter.k8s.aws/instance-hypervisor"
          operator: In
          values: ["nitro"]
        - key: "karpenter.k8s.aws/instance-generation"
          operator: Gt
          values: ["2"]
        - key: "topology.kubernetes.io/zone"
          operator: In
          values: ["us-west-2a", "us-west-2b"]
        - key: "kubernetes.io/arch"
          operator: In
          values: ["arm64", "amd64"]
        - key: "karpenter.sh/capacity-type"
          operator: In
          values: ["spot", "on-demand"]
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 1m
    budgets:
    - nodes: 10%
    - schedule: "0 9 * * mon-fri"
      duration: 8h
      nodes: "0"
  limits:
    cpu: "1000"
    memory: 1000Gi
  weight: 10
`

func nodePoolCases() []validationCase {
	b := nodePoolBase
	return []validationCase{
		// Accepted.
		{name: "spec example", base: nodePoolSpecExample},
		{name: "docs style", base: nodePoolDocsStyle},
		{name: "minimal", base: b},
		{name: "weight 1", base: b, patch: `spec: {weight: 1}`},
		{name: "weight 100", base: b, patch: `spec: {weight: 100}`},
		{name: "consolidateAfter Never", base: b, patch: `spec: {disruption: {consolidateAfter: Never}}`},
		{name: "consolidateAfter compound", base: b, patch: `spec: {disruption: {consolidateAfter: 1h30m10s}}`},
		{name: "expireAfter Never", base: b, patch: `spec: {template: {spec: {expireAfter: Never}}}`},
		{name: "consolidationPolicy WhenEmpty", base: b, patch: `spec: {disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 30s}}`},
		{name: "budget macro schedule", base: b, patch: `spec: {disruption: {budgets: [{nodes: "1", schedule: "@daily", duration: 10m}]}}`},
		{name: "budget hours and minutes", base: b, patch: `spec: {disruption: {budgets: [{nodes: "100%", schedule: "30 2 * * *", duration: 1h30m}]}}`},
		{name: "budget all reasons", base: b, patch: `spec: {disruption: {budgets: [{nodes: "5", reasons: [Underutilized, Empty, Drifted]}]}}`},
		{name: "requirement Exists without values", base: b, patch: `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-gpu-count, operator: Exists}]}}}`},
		{name: "requirement DoesNotExist", base: b, patch: `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-gpu-name, operator: DoesNotExist}]}}}`},
		{name: "requirement Lt", base: b, patch: `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-memory, operator: Lt, values: ["65536"]}]}}}`},
		{name: "minValues equals number of values", base: b, patch: `spec: {template: {spec: {requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge], minValues: 2}]}}}`},
		{name: "minValues with NotIn", base: b, patch: `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-family, operator: NotIn, values: [t2], minValues: 3}]}}}`},
		{name: "requirement custom and aws domains", base: b, patch: `spec: {template: {spec: {requirements: [{key: example.com/team, operator: In, values: [a]}, {key: topology.k8s.aws/zone-id, operator: In, values: [usw2-az1]}, {key: node.kubernetes.io/windows-build, operator: Exists}]}}}`},
		{name: "template labels allowed domains", base: b, patch: `
spec:
  template:
    metadata:
      labels:
        team: a
        node.kubernetes.io/role: web
        node-restriction.kubernetes.io/pool: x
        kops.k8s.io/ig: nodes
        karpenter.sh/capacity-type: spot
        karpenter.k8s.aws/instance-family: m5`},
		{name: "static nodepool with nodes limit", base: b, patch: `spec: {replicas: 3, limits: {nodes: "5"}}`},
		{name: "taints with every effect", base: b, patch: `spec: {template: {spec: {taints: [{key: a, effect: NoSchedule}, {key: example.com/b, value: v1, effect: PreferNoSchedule}, {key: c, effect: NoExecute}]}}}`},
		{name: "limits with extended resource", base: b, patch: `spec: {limits: {cpu: "100", memory: 400Gi, nvidia.com/gpu: "8", nodes: "20"}}`},
		{name: "update of nodeClassRef name", base: b, update: `spec: {template: {spec: {nodeClassRef: {name: other}}}}`},
		{name: "50 budgets", base: b, patch: `spec: {disruption: {budgets: [` + repeatTerm(`{nodes: "1"}`, 50) + `]}}`},
		{name: "100 requirements", base: b, patch: `spec: {template: {spec: {requirements: [` + repeatTerm(`{key: example.com/x, operator: Exists}`, 100) + `]}}}`},
		{name: "taint with timeAdded", base: b, patch: `spec: {template: {spec: {taints: [{key: a, effect: NoExecute, timeAdded: "2026-01-01T00:00:00Z"}]}}}`},

		// Rejected.
		{name: "weight 0", base: b, patch: `spec: {weight: 0}`, want: "spec.weight in body should be greater than or equal to 1"},
		{name: "weight 101", base: b, patch: `spec: {weight: 101}`, want: "spec.weight in body should be less than or equal to 100"},
		{name: "requirement on karpenter.sh/nodepool", base: b, patch: `spec: {template: {spec: {requirements: [{key: karpenter.sh/nodepool, operator: In, values: [x]}]}}}`, want: `label "karpenter.sh/nodepool" is restricted`},
		{name: "requirement on hostname", base: b, patch: `spec: {template: {spec: {requirements: [{key: kubernetes.io/hostname, operator: In, values: [x]}]}}}`, want: `label "kubernetes.io/hostname" is restricted`},
		{name: "requirement in kubernetes.io domain", base: b, patch: `spec: {template: {spec: {requirements: [{key: kubernetes.io/foo, operator: Exists}]}}}`, want: `label domain "kubernetes.io" is restricted`},
		{name: "requirement in k8s.io subdomain", base: b, patch: `spec: {template: {spec: {requirements: [{key: foo.k8s.io/bar, operator: Exists}]}}}`, want: `label domain "k8s.io" is restricted`},
		{name: "requirement in karpenter.sh domain", base: b, patch: `spec: {template: {spec: {requirements: [{key: karpenter.sh/registered, operator: Exists}]}}}`, want: `label domain "karpenter.sh" is restricted`},
		{name: "requirement in karpenter.k8s.aws domain", base: b, patch: `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/made-up, operator: Exists}]}}}`, want: `label domain "karpenter.k8s.aws" is restricted`},
		{name: "requirement key malformed", base: b, patch: `spec: {template: {spec: {requirements: [{key: "-bad key", operator: Exists}]}}}`, want: "spec.template.spec.requirements[0].key in body should match"},
		{name: "requirement operator unknown", base: b, patch: `spec: {template: {spec: {requirements: [{key: kubernetes.io/os, operator: Equals, values: [linux]}]}}}`, want: `Unsupported value: "Equals"`},
		{name: "requirement In without values", base: b, patch: `spec: {template: {spec: {requirements: [{key: kubernetes.io/os, operator: In}]}}}`, want: "operator In needs at least one value"},
		{name: "requirement Gt not a number", base: b, patch: `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["four"]}]}}}`, want: "Gt, Lt, Gte and Lte need a non-negative integer value"},
		{name: "requirement Lt two values", base: b, patch: `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: ["4", "8"]}]}}}`, want: "Gt, Lt, Gte and Lte need exactly one value"},
		{name: "minValues above number of values", base: b, patch: `spec: {template: {spec: {requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large], minValues: 2}]}}}`, want: "minValues must not exceed the number of values"},
		{name: "minValues 0", base: b, patch: `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-family, operator: Exists, minValues: 0}]}}}`, want: "minValues in body should be greater than or equal to 1"},
		{name: "minValues 51", base: b, patch: `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-family, operator: Exists, minValues: 51}]}}}`, want: "minValues in body should be less than or equal to 50"},
		{name: "template label hostname", base: b, patch: `spec: {template: {metadata: {labels: {kubernetes.io/hostname: x}}}}`, want: `label "kubernetes.io/hostname" is restricted`},
		{name: "template label nodepool", base: b, patch: `spec: {template: {metadata: {labels: {karpenter.sh/nodepool: x}}}}`, want: `template label "karpenter.sh/nodepool" is set by Dovetail`},
		{name: "template label kubernetes.io domain", base: b, patch: `spec: {template: {metadata: {labels: {topology.kubernetes.io/rack: r1}}}}`, want: `label domain "kubernetes.io" is restricted`},
		{name: "template label karpenter.k8s.aws domain", base: b, patch: `spec: {template: {metadata: {labels: {karpenter.k8s.aws/anything: x}}}}`, want: `label domain "karpenter.k8s.aws" is restricted`},
		{name: "template label bad value", base: b, patch: `spec: {template: {metadata: {labels: {team: "has space"}}}}`, want: "spec.template.metadata.labels.team in body should match"},
		{name: "template label bad key", base: b, patch: `spec: {template: {metadata: {labels: {"a/b/c": x}}}}`, want: "keys must be qualified names"},
		{name: "budget schedule malformed", base: b, patch: `spec: {disruption: {budgets: [{nodes: "1", schedule: "every day", duration: 1h}]}}`, want: "spec.disruption.budgets[0].schedule in body should match"},
		{name: "budget schedule without duration", base: b, patch: `spec: {disruption: {budgets: [{nodes: "1", schedule: "@daily"}]}}`, want: "schedule and duration must be set together"},
		{name: "budget duration without schedule", base: b, patch: `spec: {disruption: {budgets: [{nodes: "1", duration: 1h}]}}`, want: "schedule and duration must be set together"},
		{name: "budget duration in seconds", base: b, patch: `spec: {disruption: {budgets: [{nodes: "1", schedule: "@daily", duration: 30s}]}}`, want: "spec.disruption.budgets[0].duration in body should match"},
		{name: "budget nodes above 100 percent", base: b, patch: `spec: {disruption: {budgets: [{nodes: "101%"}]}}`, want: "spec.disruption.budgets[0].nodes in body should match"},
		{name: "budget reason Expired", base: b, patch: `spec: {disruption: {budgets: [{nodes: "1", reasons: [Expired]}]}}`, want: `Unsupported value: "Expired"`},
		{name: "consolidateAfter days", base: b, patch: `spec: {disruption: {consolidateAfter: 1d}}`, want: "spec.disruption.consolidateAfter in body should match"},
		{name: "consolidateAfter lowercase never", base: b, patch: `spec: {disruption: {consolidateAfter: never}}`, want: "spec.disruption.consolidateAfter in body should match"},
		{name: "consolidationPolicy unknown", base: b, patch: `spec: {disruption: {consolidationPolicy: Always}}`, want: `Unsupported value: "Always"`},
		{name: "expireAfter days", base: b, patch: `spec: {template: {spec: {expireAfter: 30d}}}`, want: "spec.template.spec.expireAfter in body should match"},
		{name: "terminationGracePeriod Never", base: b, patch: `spec: {template: {spec: {terminationGracePeriod: Never}}}`, want: "spec.template.spec.terminationGracePeriod in body should match"},
		{name: "nodeClassRef missing", base: b, patch: `spec: {template: {spec: {nodeClassRef: null}}}`, want: "spec.template.spec.nodeClassRef: Required value"},
		{name: "nodeClassRef group empty", base: b, patch: `spec: {template: {spec: {nodeClassRef: {group: ""}}}}`, want: "nodeClassRef.group may not be empty"},
		{name: "taint effect unknown", base: b, patch: `spec: {template: {spec: {taints: [{key: a, effect: Sometimes}]}}}`, want: `Unsupported value: "Sometimes"`},
		{name: "startup taint key malformed", base: b, patch: `spec: {template: {spec: {startupTaints: [{key: "bad key!", effect: NoSchedule}]}}}`, want: "spec.template.spec.startupTaints[0].key in body should match"},
		{name: "static nodepool with weight", base: b, patch: `spec: {replicas: 2, weight: 10}`, want: "spec.weight cannot be set on a static NodePool"},
		{name: "static nodepool with cpu limit", base: b, patch: `spec: {replicas: 2, limits: {cpu: "10"}}`, want: "a static NodePool (spec.replicas set) supports only limits.nodes"},
		{name: "replicas negative", base: b, patch: `spec: {replicas: -1}`, want: "spec.replicas in body should be greater than or equal to 0"},
		{name: "update nodeClassRef group", base: b, update: `spec: {template: {spec: {nodeClassRef: {group: example.com}}}}`, want: "spec.template.spec.nodeClassRef.group is immutable"},
		{name: "update nodeClassRef kind", base: b, update: `spec: {template: {spec: {nodeClassRef: {kind: OtherNodeClass}}}}`, want: "spec.template.spec.nodeClassRef.kind is immutable"},
		{name: "51 budgets", base: b, patch: `spec: {disruption: {budgets: [` + repeatTerm(`{nodes: "1"}`, 51) + `]}}`, want: "must have at most 50 items"},
		{name: "101 requirements", base: b, patch: `spec: {template: {spec: {requirements: [` + repeatTerm(`{key: example.com/x, operator: Exists}`, 101) + `]}}}`, want: "must have at most 100 items"},
		{name: "update dynamic to static", base: b, update: `spec: {replicas: 3}`, want: "spec.replicas cannot be added or removed after creation"},
	}
}

func TestNodePoolValidation(t *testing.T) { runCases(t, nodePoolCases()) }
