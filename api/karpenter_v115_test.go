package api_test

// The cases of this file follow what Karpenter v1.15.0 (2026-10-10) changed at admission: what its CRDs accept,
// default and refuse for the fields it added or opened. They run through TestKarpenterV114Admission's checks
// (strict field validation, accepted specs read back with Karpenter's defaults) in TestKarpenterV115Admission.

import (
	"fmt"
	"strings"
	"testing"
)

func v115Cases() []validationCase {
	var out []validationCase
	out = append(out, v115NodePoolCases()...)
	out = append(out, v115NodeClaimCases()...)
	out = append(out, v115EC2NodeClassCases()...)
	return out
}

func v115NodePoolCases() []validationCase {
	b := nodePoolBase
	budget := func(reasons string) string {
		return `spec: {disruption: {budgets: [{nodes: "1", reasons: ` + reasons + `}]}}`
	}
	return []validationCase{
		// Budget reason Unhealthy (node repair), alone, with the others, in a schedule, and as a set.
		{name: "v115 np budget reason Unhealthy", base: b, patch: budget(`[Unhealthy]`)},
		{name: "v115 np budget all four reasons", base: b, patch: budget(`[Underutilized, Empty, Drifted, Unhealthy]`)},
		{name: "v115 np budget Unhealthy with a schedule", base: b, patch: `spec: {disruption: {budgets: [{nodes: "0", reasons: [Unhealthy], schedule: "0 9 * * mon-fri", duration: 8h}]}}`},
		{name: "v115 np budget Unhealthy percent", base: b, patch: `spec: {disruption: {budgets: [{nodes: "20%", reasons: [Unhealthy]}, {nodes: "5"}]}}`},
		{name: "v115 np budget Unhealthy twice", base: b, patch: budget(`[Unhealthy, Unhealthy]`), want: "Duplicate value"},
		{name: "v115 np budget reason unhealthy lower-case", base: b, patch: budget(`[unhealthy]`), want: `Unsupported value: "unhealthy"`},
		{name: "v115 np budget reason Repair", base: b, patch: budget(`[Repair]`), want: `Unsupported value: "Repair"`},
		{name: "v115 np update adds Unhealthy", base: b, update: budget(`[Unhealthy]`)},
		// consolidateAfter is defaulted (0s) rather than required once disruption is given.
		{name: "v115 np disruption without consolidateAfter", base: b, patch: `spec: {disruption: {consolidationPolicy: WhenEmpty}}`},
		{name: "v115 np empty disruption", base: b, patch: `spec: {disruption: {}}`},
		// karpenter.sh/do-not-repair is an annotation: the template passes it to the NodeClaims and Nodes.
		{name: "v115 np template annotation do-not-repair", base: b, patch: `spec: {template: {metadata: {annotations: {karpenter.sh/do-not-repair: "true"}}}}`},
	}
}

func v115NodeClaimCases() []validationCase {
	b := nodeClaimBase
	return []validationCase{
		{name: "v115 nc annotation do-not-repair", base: b, patch: `metadata: {annotations: {karpenter.sh/do-not-repair: "true"}}`},
		{name: "v115 nc requirement nitro-sandbox true", base: b, patch: `spec: {requirements: [{key: karpenter.k8s.aws/nitro-sandbox, operator: In, values: ["true"]}]}`},
	}
}

func v115EC2NodeClassCases() []validationCase {
	b := ec2NodeClassBase
	kl := func(fields string) string { return `spec: {kubelet: {` + fields + `}}` }
	var cs []validationCase
	// spec.kubelet is an open object: every field, type and value is accepted at admission (the status controller
	// judges them); only a kubelet that is not an object is refused.
	for _, c := range []struct{ name, fields string }{
		{"empty", ``},
		{"modelled fields", `maxPods: 110, podsPerCore: 10, kubeReserved: {cpu: 200m, memory: 100Mi}, systemReserved: {cpu: 200m}, evictionHard: {memory.available: 5%}`},
		{"upstream field", `serializeImagePulls: false`},
		{"nested upstream field", `logging: {format: json, flushFrequency: 5s, options: {json: {infoBufferSize: 100Mi, splitStream: true}}}`},
		{"unknown field", `notAKubeletField: true`},
		{"misspelled field", `serialiseImagePulls: false`},
		{"wrong type", `serializeImagePulls: "no"`},
		{"podsPerCore a word", `podsPerCore: ten`},
		{"maxPods expression", `maxPods: "min(pods, 110)"`},
		{"maxPods negative", `maxPods: -1`},
		{"maxPods too large for int32", `maxPods: 3000000000`},
		{"kubeReserved expression", `kubeReserved: {memory: "pods * 11 + 255"}`},
		{"systemReserved expression", `systemReserved: {cpu: "vcpus * 10"}`},
		{"reserved key outside the set", `systemReserved: {gpu: "1"}`},
		{"reserved negative", `kubeReserved: {cpu: "-1"}`},
		{"eviction signal outside the set", `evictionHard: {memory.free: 5%}`},
		{"eviction value not a quantity", `evictionHard: {memory.available: lots}`},
		{"evictionSoft without grace period", `evictionSoft: {memory.available: 10%}`},
		{"grace period without evictionSoft", `evictionSoftGracePeriod: {memory.available: 1m}`},
		{"image gc high not above low", `imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 50`},
		{"image gc above 100", `imageGCHighThresholdPercent: 101`},
		{"registerWithTaints", `registerWithTaints: [{key: example.com/x, effect: NoSchedule}]`},
		{"several clusterDNS", `clusterDNS: ["10.0.0.10", "10.0.0.11"]`},
		{"null value", `maxPods: null`},
	} {
		cs = append(cs, validationCase{name: "v115 ec2 kubelet " + c.name, base: b, patch: kl(c.fields)})
	}
	cs = append(cs,
		validationCase{name: "v115 ec2 kubelet a list", base: b, patch: `spec: {kubelet: [maxPods]}`, want: "spec.kubelet: Invalid value"},
		validationCase{name: "v115 ec2 kubelet a string", base: b, patch: `spec: {kubelet: "maxPods=10"}`, want: "spec.kubelet: Invalid value"},
		validationCase{name: "v115 ec2 kubelet update to another field", base: b, patch: kl(`maxPods: 10`), update: kl(`containerLogMaxFiles: 3`)},
	)
	// enclaveOptions: enabled is required once the object is given.
	cs = append(cs,
		validationCase{name: "v115 ec2 enclaveOptions enabled", base: b, patch: `spec: {enclaveOptions: {enabled: true}}`},
		validationCase{name: "v115 ec2 enclaveOptions disabled", base: b, patch: `spec: {enclaveOptions: {enabled: false}}`},
		validationCase{name: "v115 ec2 enclaveOptions with a bottlerocket alias", base: b, patch: `spec: {amiSelectorTerms: [{alias: bottlerocket@latest}], enclaveOptions: {enabled: true}}`},
		validationCase{name: "v115 ec2 enclaveOptions empty", base: b, patch: `spec: {enclaveOptions: {}}`, want: "spec.enclaveOptions.enabled: Required value"},
		validationCase{name: "v115 ec2 enclaveOptions enabled a word", base: b, patch: `spec: {enclaveOptions: {enabled: "yes"}}`, want: "spec.enclaveOptions.enabled: Invalid value"},
		validationCase{name: "v115 ec2 enclaveOptions unknown field", base: b, patch: `spec: {enclaveOptions: {enabled: true, count: 1}}`, want: `unknown field "spec.enclaveOptions.count"`},
		validationCase{name: "v115 ec2 enclaveOptions a bool", base: b, patch: `spec: {enclaveOptions: true}`, want: "spec.enclaveOptions: Invalid value"},
		validationCase{name: "v115 ec2 update enables enclaves", base: b, update: `spec: {enclaveOptions: {enabled: true}}`},
	)
	return cs
}

// TestKarpenterV115Admission applies the v1.15 cases the way TestKarpenterV114Admission applies its own.
func TestKarpenterV115Admission(t *testing.T) { runKarpenterCases(t, v115Cases()) }

// TestKarpenterV115CaseCount keeps this suite from shrinking unnoticed.
func TestKarpenterV115CaseCount(t *testing.T) {
	accepted, rejected := countCases(v115Cases())
	t.Logf("Karpenter v1.15 admission cases: %d accepted, %d rejected", accepted, rejected)
	if accepted < 35 || rejected < 8 {
		t.Errorf("want at least 35 accepted and 8 rejected cases, have %d and %d", accepted, rejected)
	}
}

// TestKarpenterV115CasesDistinct: no v1.15 case repeats the name of a v1.14 case (both suites run side by side).
func TestKarpenterV115CasesDistinct(t *testing.T) {
	names := map[string]bool{}
	for _, c := range v114Cases() {
		names[c.name] = true
	}
	var dup []string
	for _, c := range v115Cases() {
		if names[c.name] {
			dup = append(dup, c.name)
		}
		if !strings.HasPrefix(c.name, "v115 ") {
			dup = append(dup, fmt.Sprintf("%s (no v115 prefix)", c.name))
		}
	}
	if len(dup) > 0 {
		t.Errorf("v1.15 case names clash: %v", dup)
	}
}
