package api_test

import "testing"

const nodeClaimBase = `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: base
  labels: {karpenter.sh/nodepool: default}
spec:
  requirements:
    - {key: karpenter.sh/nodepool, operator: In, values: ["default"]}
    - {key: node.kubernetes.io/instance-type, operator: In, values: ["m5.large", "m5.xlarge"], minValues: 1}
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
`

func nodeClaimCases() []validationCase {
	b := nodeClaimBase
	return []validationCase{
		// Accepted.
		{name: "minimal", base: b},
		{name: "every field", base: b, patch: `
spec:
  taints: [{key: example.com/dedicated, value: gpu, effect: NoSchedule}]
  startupTaints: [{key: example.com/agent-not-ready, effect: NoExecute}]
  resources: {requests: {cpu: "3", memory: 6Gi, pods: "10"}}
  expireAfter: Never
  terminationGracePeriod: 1h`},
		{name: "capacity type and zone requirements", base: b, patch: `spec: {requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}, {key: topology.kubernetes.io/zone, operator: NotIn, values: [us-west-2d]}]}`},
		{name: "metadata update keeps spec", base: b, update: `metadata: {labels: {example.com/extra: "yes"}, annotations: {karpenter.sh/nodepool-hash: "123"}}`},

		// Rejected.
		{name: "spec update", base: b, update: `spec: {requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [c5.large]}]}`, want: "spec is immutable"},
		{name: "spec update of expireAfter", base: b, update: `spec: {expireAfter: 1h}`, want: "spec is immutable"},
		{name: "requirement on hostname", base: b, patch: `spec: {requirements: [{key: kubernetes.io/hostname, operator: In, values: [x]}]}`, want: `label "kubernetes.io/hostname" is restricted`},
		{name: "minValues above number of values", base: b, patch: `spec: {requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large], minValues: 3}]}`, want: "minValues must not exceed the number of values"},
		{name: "nodeClassRef missing", base: b, patch: `spec: {nodeClassRef: null}`, want: "spec.nodeClassRef: Required value"},
		{name: "requirements missing", base: b, patch: `spec: {requirements: null}`, want: "spec.requirements: Required value"},
		{name: "taint effect unknown", base: b, patch: `spec: {taints: [{key: a, effect: NoRun}]}`, want: `Unsupported value: "NoRun"`},
		{name: "terminationGracePeriod in days", base: b, patch: `spec: {terminationGracePeriod: 1d}`, want: "spec.terminationGracePeriod in body should match"},
	}
}

func TestNodeClaimValidation(t *testing.T) { runCases(t, nodeClaimCases()) }
