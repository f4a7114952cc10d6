package api_test

// The cases of this file follow Karpenter v1.14's admission: every manifest Karpenter v1.14 runs is
// accepted, and the ones it refuses are refused. Accepted manifests are also read back and compared, field by
// field, with the manifest plus the defaults Karpenter v1.14's CRDs apply (karpenterDefaults).

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// v114Cases returns the NodePool, NodeClaim and EC2NodeClass cases of this file.
func v114Cases() []validationCase {
	var out []validationCase
	out = append(out, v114NodePoolCases()...)
	out = append(out, v114NodeClaimCases()...)
	out = append(out, v114EC2NodeClassCases()...)
	return out
}

func v114NodePoolCases() []validationCase {
	b := nodePoolBase
	req := func(key, op, values string) string {
		return fmt.Sprintf(`spec: {template: {spec: {requirements: [{key: %s, operator: %s, values: %s}]}}}`, key, op, values)
	}
	var cs []validationCase
	// Consolidation policies, Balanced among them, alone and next to consolidateAfter and budgets.
	for _, p := range []string{"WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"} {
		cs = append(cs,
			validationCase{name: "np policy " + p, base: b, patch: `spec: {disruption: {consolidationPolicy: ` + p + `}}`},
			validationCase{name: "np policy " + p + " with consolidateAfter", base: b, patch: `spec: {disruption: {consolidationPolicy: ` + p + `, consolidateAfter: 30s}}`},
			validationCase{name: "np policy " + p + " with budgets", base: b, patch: `spec: {disruption: {consolidationPolicy: ` + p + `, budgets: [{nodes: "1", reasons: [Underutilized]}]}}`},
		)
	}
	cs = append(cs,
		validationCase{name: "np policy Balanced with Never", base: b, patch: `spec: {disruption: {consolidationPolicy: Balanced, consolidateAfter: Never}}`},
		validationCase{name: "np policy lower-case balanced", base: b, patch: `spec: {disruption: {consolidationPolicy: balanced}}`, want: `Unsupported value: "balanced"`},
		validationCase{name: "np policy Always", base: b, patch: `spec: {disruption: {consolidationPolicy: Always}}`, want: `Unsupported value: "Always"`},
		validationCase{name: "np policy update to Balanced", base: b, update: `spec: {disruption: {consolidationPolicy: Balanced}}`},
	)
	// Numeric operators: every one with a non-negative integer on a numeric key.
	for _, op := range []string{"Gt", "Lt", "Gte", "Lte"} {
		for _, v := range []string{"0", "4", "+8", "1000000"} {
			cs = append(cs, validationCase{name: fmt.Sprintf("np %s %s", op, v), base: b, patch: req("karpenter.k8s.aws/instance-cpu", op, `["`+v+`"]`)})
		}
		cs = append(cs,
			validationCase{name: "np " + op + " on a custom key", base: b, patch: req("example.com/generation", op, `["3"]`)},
			validationCase{name: "np " + op + " negative", base: b, patch: req("karpenter.k8s.aws/instance-cpu", op, `["-1"]`), want: "need a non-negative integer value"},
			validationCase{name: "np " + op + " not a number", base: b, patch: req("karpenter.k8s.aws/instance-cpu", op, `["four"]`), want: "need a non-negative integer value"},
			validationCase{name: "np " + op + " decimal", base: b, patch: req("karpenter.k8s.aws/instance-cpu", op, `["1.5"]`), want: "need a non-negative integer value"},
			validationCase{name: "np " + op + " two values", base: b, patch: req("karpenter.k8s.aws/instance-cpu", op, `["1", "2"]`), want: "need exactly one value"},
			validationCase{name: "np " + op + " no values", base: b, patch: `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: ` + op + `}]}}}`, want: "need exactly one value"},
		)
	}
	cs = append(cs,
		validationCase{name: "np Gte and Lte bound one key", base: b, patch: `spec: {template: {spec: {requirements: [
  {key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["4"]},
  {key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ["8"]},
  {key: karpenter.k8s.aws/instance-memory, operator: Gte, values: ["8192"]}]}}}`},
		validationCase{name: "np Gte with minValues", base: b, patch: `spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["4"], minValues: 1}]}}}`},
		validationCase{name: "np operator Ge", base: b, patch: req("karpenter.k8s.aws/instance-cpu", "Ge", `["4"]`), want: `Unsupported value: "Ge"`},
		validationCase{name: "np operator lower-case gte", base: b, patch: req("karpenter.k8s.aws/instance-cpu", "gte", `["4"]`), want: `Unsupported value: "gte"`},
	)
	// Requirement values: no length or syntax limit at admission.
	for _, n := range []int{63, 64, 100, 253, 1000} {
		v := strings.Repeat("a", n)
		cs = append(cs,
			validationCase{name: fmt.Sprintf("np In value of %d characters", n), base: b, patch: req("example.com/team", "In", `["`+v+`"]`)},
			validationCase{name: fmt.Sprintf("np NotIn value of %d characters", n), base: b, patch: req("example.com/team", "NotIn", `["`+v+`"]`)},
		)
	}
	cs = append(cs,
		validationCase{name: "np value with a slash", base: b, patch: req("example.com/team", "In", `["a/b"]`)},
		validationCase{name: "np value with spaces", base: b, patch: req("example.com/team", "In", `["a b"]`)},
		validationCase{name: "np empty value", base: b, patch: req("example.com/team", "In", `[""]`)},
	)
	// Budget reasons are a set.
	for _, r := range []string{"Underutilized", "Empty", "Drifted"} {
		cs = append(cs,
			validationCase{name: "np budget reason " + r, base: b, patch: `spec: {disruption: {budgets: [{nodes: "1", reasons: [` + r + `]}]}}`},
			validationCase{name: "np budget reason " + r + " twice", base: b, patch: `spec: {disruption: {budgets: [{nodes: "1", reasons: [` + r + `, ` + r + `]}]}}`, want: "Duplicate value"},
		)
	}
	cs = append(cs,
		validationCase{name: "np budget all three reasons", base: b, patch: `spec: {disruption: {budgets: [{nodes: "1", reasons: [Underutilized, Empty, Drifted]}]}}`},
		validationCase{name: "np budget reasons repeated in another budget", base: b, patch: `spec: {disruption: {budgets: [{nodes: "1", reasons: [Empty]}, {nodes: "2", reasons: [Empty]}]}}`},
		validationCase{name: "np budget duplicate among three", base: b, patch: `spec: {disruption: {budgets: [{nodes: "1", reasons: [Empty, Drifted, Empty]}]}}`, want: "Duplicate value"},
		validationCase{name: "np budget reason unknown", base: b, patch: `spec: {disruption: {budgets: [{nodes: "1", reasons: [Expired]}]}}`, want: `Unsupported value: "Expired"`},
	)
	// Taints: a value, when given, is a non-empty label value.
	cs = append(cs,
		validationCase{name: "np taint without value", base: b, patch: `spec: {template: {spec: {taints: [{key: example.com/dedicated, effect: NoSchedule}]}}}`},
		validationCase{name: "np taint with value", base: b, patch: `spec: {template: {spec: {taints: [{key: example.com/dedicated, value: gpu, effect: NoExecute}]}}}`},
		validationCase{name: "np taint with empty value", base: b, patch: `spec: {template: {spec: {taints: [{key: example.com/dedicated, value: "", effect: NoSchedule}]}}}`, want: "should be at least 1 chars long"},
		validationCase{name: "np startup taint with empty value", base: b, patch: `spec: {template: {spec: {startupTaints: [{key: example.com/init, value: "", effect: NoSchedule}]}}}`, want: "should be at least 1 chars long"},
	)
	// Well-known keys Karpenter v1.14 added to the karpenter.k8s.aws domain, in requirements and template labels.
	for _, k := range []string{"nitro-sandbox", "placement-group-id", "placement-group-partition", "capacity-reservation-interruptible", "instance-capability-flex"} {
		key := "karpenter.k8s.aws/" + k
		cs = append(cs,
			validationCase{name: "np requirement " + k, base: b, patch: req(key, "In", `["x"]`)},
			validationCase{name: "np requirement " + k + " Exists", base: b, patch: `spec: {template: {spec: {requirements: [{key: ` + key + `, operator: Exists}]}}}`},
			validationCase{name: "np template label " + k, base: b, patch: `spec: {template: {metadata: {labels: {` + key + `: x}}}}`},
		)
	}
	cs = append(cs,
		validationCase{name: "np requirement unknown aws key", base: b, patch: req("karpenter.k8s.aws/nitro", "In", `["true"]`), want: `label domain "karpenter.k8s.aws" is restricted`},
		validationCase{name: "np requirement placement-group-partition Gte", base: b, patch: req("karpenter.k8s.aws/placement-group-partition", "Gte", `["2"]`)},
	)
	return cs
}

func v114NodeClaimCases() []validationCase {
	b := nodeClaimBase
	req := func(key, op, values string) string {
		return fmt.Sprintf(`spec: {requirements: [{key: %s, operator: %s, values: %s}]}`, key, op, values)
	}
	var cs []validationCase
	for _, op := range []string{"Gte", "Lte"} {
		cs = append(cs,
			validationCase{name: "nc " + op + " 0", base: b, patch: req("karpenter.k8s.aws/instance-cpu", op, `["0"]`)},
			validationCase{name: "nc " + op + " 16", base: b, patch: req("karpenter.k8s.aws/instance-memory", op, `["16384"]`)},
			validationCase{name: "nc " + op + " negative", base: b, patch: req("karpenter.k8s.aws/instance-cpu", op, `["-4"]`), want: "need a non-negative integer value"},
			validationCase{name: "nc " + op + " word", base: b, patch: req("karpenter.k8s.aws/instance-cpu", op, `["many"]`), want: "need a non-negative integer value"},
			validationCase{name: "nc " + op + " two values", base: b, patch: req("karpenter.k8s.aws/instance-cpu", op, `["4", "8"]`), want: "need exactly one value"},
		)
	}
	for _, n := range []int{64, 200} {
		cs = append(cs, validationCase{name: fmt.Sprintf("nc value of %d characters", n), base: b, patch: req("example.com/team", "In", `["`+strings.Repeat("z", n)+`"]`)})
	}
	for _, k := range []string{"nitro-sandbox", "placement-group-id", "placement-group-partition"} {
		cs = append(cs, validationCase{name: "nc requirement " + k, base: b, patch: req("karpenter.k8s.aws/"+k, "In", `["x"]`)})
	}
	cs = append(cs, validationCase{name: "nc requirement on karpenter.sh/nodepool", base: b, patch: req("karpenter.sh/nodepool", "In", `["default"]`)})
	return cs
}

func v114EC2NodeClassCases() []validationCase {
	b := ec2NodeClassBase
	ami := func(alias string) string { return `spec: {amiSelectorTerms: [{alias: "` + alias + `"}]}` }
	var cs []validationCase
	// Alias versions in every form Karpenter accepts; Windows only at latest.
	for _, a := range []string{"al2@latest", "al2@v20240807", "al2023@latest", "al2023@v20240807", "al2023@20240807",
		"bottlerocket@latest", "bottlerocket@1.10.0", "bottlerocket@v1.10.0", "bottlerocket@v1.20.3-abc",
		"windows2019@latest", "windows2022@latest", "windows2025@latest", "AL2023@latest"} {
		want := ""
		if a == "AL2023@latest" {
			want = "alias family must be one of"
		}
		cs = append(cs, validationCase{name: "ec2 alias " + a, base: b, patch: ami(a), want: want})
	}
	for _, c := range []struct{ alias, want string }{
		{"windows2025@v1", "windows families only support the version latest"},
		{"windows2025@2025.01.01", "windows families only support the version latest"},
		{"windows2019@v20240807", "windows families only support the version latest"},
		{"ubuntu@latest", "alias family must be one of"},
		{"windows2016@latest", "alias family must be one of"},
		{"al2023", "alias must have the form family@version"},
		{"al2023@", "alias must have the form family@version"},
		{"@latest", "alias must have the form family@version"},
		{"al-2023@latest", "alias must have the form family@version"},
		{"bottlerocket@v1.10.0-abcdefghijklmn", "Too long"},
	} {
		cs = append(cs, validationCase{name: "ec2 alias " + c.alias, base: b, patch: ami(c.alias), want: c.want})
	}
	// amiFamily Windows2025, with ids or its own alias, and mismatches.
	cs = append(cs,
		validationCase{name: "ec2 amiFamily Windows2025 with ids", base: b, patch: `spec: {amiFamily: Windows2025, amiSelectorTerms: [{id: ami-0123456789abcdef0}]}`},
		validationCase{name: "ec2 amiFamily Windows2025 with its alias", base: b, patch: `spec: {amiFamily: Windows2025, amiSelectorTerms: [{alias: windows2025@latest}]}`},
		validationCase{name: "ec2 amiFamily Custom with windows2025 alias", base: b, patch: `spec: {amiFamily: Custom, amiSelectorTerms: [{alias: windows2025@latest}]}`},
		validationCase{name: "ec2 amiFamily Windows2025 with windows2022 alias", base: b, patch: `spec: {amiFamily: Windows2025, amiSelectorTerms: [{alias: windows2022@latest}]}`, want: "spec.amiFamily must be Windows2022 or Custom"},
		validationCase{name: "ec2 amiFamily Windows2022 with windows2025 alias", base: b, patch: `spec: {amiFamily: Windows2022, amiSelectorTerms: [{alias: windows2025@latest}]}`, want: "spec.amiFamily must be Windows2025 or Custom"},
		validationCase{name: "ec2 amiFamily AL2023 with windows2025 alias", base: b, patch: `spec: {amiFamily: AL2023, amiSelectorTerms: [{alias: windows2025@latest}]}`, want: "spec.amiFamily must be Windows2025 or Custom"},
		validationCase{name: "ec2 amiFamily Windows2025 with name terms", base: b, patch: `spec: {amiFamily: Windows2025, amiSelectorTerms: [{name: "Windows_Server-2025-English-Core-EKS_Optimized-*", owner: amazon}]}`},
		validationCase{name: "ec2 amiFamily Windows2026", base: b, patch: `spec: {amiFamily: Windows2026, amiSelectorTerms: [{id: ami-0123456789abcdef0}]}`, want: `Unsupported value: "Windows2026"`},
	)
	// Selector terms: a term mixing id with other fields is refused only when every term does, as Karpenter judges.
	cs = append(cs,
		validationCase{name: "ec2 subnet id and tags alone", base: b, patch: `spec: {subnetSelectorTerms: [{id: subnet-0a, tags: {a: b}}]}`, want: "spec.subnetSelectorTerms: a term with id may not also set tags"},
		validationCase{name: "ec2 subnet two terms both mixing", base: b, patch: `spec: {subnetSelectorTerms: [{id: subnet-0a, tags: {a: b}}, {id: subnet-0b, tags: {c: d}}]}`, want: "spec.subnetSelectorTerms: a term with id may not also set tags"},
		validationCase{name: "ec2 subnet mixed term next to a tags term", base: b, patch: `spec: {subnetSelectorTerms: [{id: subnet-0a, tags: {a: b}}, {tags: {c: d}}]}`},
		validationCase{name: "ec2 subnet mixed term next to an id term", base: b, patch: `spec: {subnetSelectorTerms: [{id: subnet-0a, tags: {a: b}}, {id: subnet-0b}]}`},
		validationCase{name: "ec2 subnet ids only", base: b, patch: `spec: {subnetSelectorTerms: [{id: subnet-0a}, {id: subnet-0b}]}`},
		validationCase{name: "ec2 subnet empty term", base: b, patch: `spec: {subnetSelectorTerms: [{tags: {a: b}}, {}]}`, want: "each term must set tags or id"},
		validationCase{name: "ec2 sg id and name alone", base: b, patch: `spec: {securityGroupSelectorTerms: [{id: sg-0a, name: web}]}`, want: "a term with id may not also set tags or name"},
		validationCase{name: "ec2 sg id and tags alone", base: b, patch: `spec: {securityGroupSelectorTerms: [{id: sg-0a, tags: {a: b}}]}`, want: "a term with id may not also set tags or name"},
		validationCase{name: "ec2 sg name and tags alone", base: b, patch: `spec: {securityGroupSelectorTerms: [{name: web, tags: {a: b}}]}`, want: "a term with name may not also set tags or id"},
		validationCase{name: "ec2 sg mixed term next to a name term", base: b, patch: `spec: {securityGroupSelectorTerms: [{id: sg-0a, name: web}, {name: db}]}`},
		validationCase{name: "ec2 sg mixed term next to a tags term", base: b, patch: `spec: {securityGroupSelectorTerms: [{name: web, tags: {a: b}}, {tags: {c: d}}]}`},
		validationCase{name: "ec2 sg name and tags term next to an id term", base: b, patch: `spec: {securityGroupSelectorTerms: [{name: web, tags: {a: b}}, {id: sg-0b}]}`},
		validationCase{name: "ec2 cr id and ownerID alone", base: b, patch: `spec: {capacityReservationSelectorTerms: [{id: cr-0a, ownerID: "012345678901"}]}`, want: "a term with id may not also set tags, ownerID or instanceMatchCriteria"},
		validationCase{name: "ec2 cr id and criteria alone", base: b, patch: `spec: {capacityReservationSelectorTerms: [{id: cr-0a, instanceMatchCriteria: open}]}`, want: "a term with id may not also set tags, ownerID or instanceMatchCriteria"},
		validationCase{name: "ec2 cr mixed term next to a tags term", base: b, patch: `spec: {capacityReservationSelectorTerms: [{id: cr-0a, tags: {a: b}}, {tags: {c: d}}]}`},
		validationCase{name: "ec2 cr mixed term next to an id term", base: b, patch: `spec: {capacityReservationSelectorTerms: [{id: cr-0a, ownerID: "012345678901"}, {id: cr-0b}]}`},
		validationCase{name: "ec2 cr criteria only", base: b, patch: `spec: {capacityReservationSelectorTerms: [{instanceMatchCriteria: targeted}]}`},
		validationCase{name: "ec2 cr tags and owner", base: b, patch: `spec: {capacityReservationSelectorTerms: [{tags: {a: b}, ownerID: "012345678901"}]}`},
		// Karpenter's schema sets no minimum: its rule on terms with id refuses an empty list (all() of no term is
		// true), with that rule's message, as Dovetail's does.
		validationCase{name: "ec2 cr empty list", base: b, patch: `spec: {capacityReservationSelectorTerms: []}`, want: "a term with id may not also set tags, ownerID or instanceMatchCriteria"},
		validationCase{name: "ec2 cr empty term", base: b, patch: `spec: {capacityReservationSelectorTerms: [{}]}`, want: "each term must set tags, id or instanceMatchCriteria"},
		validationCase{name: "ec2 ami id with ssmParameter (id wins, as in Karpenter)", base: b, patch: `spec: {amiFamily: AL2023, amiSelectorTerms: [{id: ami-0a, ssmParameter: /my/ami}]}`},
		validationCase{name: "ec2 ami alias with ssmParameter (alias wins, as in Karpenter)", base: b, patch: `spec: {amiSelectorTerms: [{alias: al2023@latest, ssmParameter: /my/ami}]}`},
		validationCase{name: "ec2 ami ssmParameter with tags", base: b, patch: `spec: {amiFamily: AL2023, amiSelectorTerms: [{ssmParameter: /my/ami, tags: {a: b}}]}`},
		validationCase{name: "ec2 ami alias with owner", base: b, patch: `spec: {amiSelectorTerms: [{alias: al2023@latest, owner: self}]}`, want: "a term with alias may not also set id, tags, name or owner"},
		validationCase{name: "ec2 ami alias next to another term", base: b, patch: `spec: {amiFamily: AL2023, amiSelectorTerms: [{alias: al2023@latest}, {id: ami-0b}]}`, want: "an alias term must be the only term"},
		validationCase{name: "ec2 ami id and tags alone", base: b, patch: `spec: {amiFamily: AL2023, amiSelectorTerms: [{id: ami-0a, tags: {a: b}}]}`, want: "a term with id may not also set"},
		validationCase{name: "ec2 ami id and tags next to a name term", base: b, patch: `spec: {amiFamily: AL2023, amiSelectorTerms: [{id: ami-0a, tags: {a: b}}, {name: x}]}`, want: "a term with id may not also set"},
	)
	// Network interfaces.
	ni := func(items string) string { return `spec: {networkInterfaces: [` + items + `]}` }
	for _, c := range []struct{ name, items, want string }{
		{"primary only", `{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}`, ""},
		{"primary and efa-only on card 1", `{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}`, ""},
		{"primary, efa-only on cards 1 to 3", `{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}, {networkCardIndex: 2, deviceIndex: 0, interfaceType: efa-only}, {networkCardIndex: 3, deviceIndex: 0, interfaceType: efa-only}`, ""},
		{"primary and efa-only on card 0", `{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 0, deviceIndex: 1, interfaceType: efa-only}`, ""},
		{"primary and a second ENA", `{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 0, deviceIndex: 1, interfaceType: interface}`, ""},
		{"ENA and efa-only on one card", `{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 1, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 1, deviceIndex: 1, interfaceType: efa-only}`, ""},
		{"empty list", ``, ""},
		{"no primary", `{networkCardIndex: 1, deviceIndex: 0, interfaceType: interface}`, "a primary interface (networkCardIndex 0, deviceIndex 0) with interfaceType interface is required"},
		{"primary on device 1 only", `{networkCardIndex: 0, deviceIndex: 1, interfaceType: interface}`, "a primary interface (networkCardIndex 0, deviceIndex 0) with interfaceType interface is required"},
		{"efa-only primary", `{networkCardIndex: 0, deviceIndex: 0, interfaceType: efa-only}`, "a primary interface (networkCardIndex 0, deviceIndex 0) with interfaceType interface is required"},
		{"efa-only primary with ENA elsewhere", `{networkCardIndex: 0, deviceIndex: 0, interfaceType: efa-only}, {networkCardIndex: 1, deviceIndex: 0, interfaceType: interface}`, "a primary interface (networkCardIndex 0, deviceIndex 0) with interfaceType interface is required"},
		{"two efa-only on card 1", `{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}, {networkCardIndex: 1, deviceIndex: 1, interfaceType: efa-only}`, "at most one efa-only interface per network card"},
		{"two efa-only on card 0", `{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 0, deviceIndex: 1, interfaceType: efa-only}, {networkCardIndex: 0, deviceIndex: 2, interfaceType: efa-only}`, "at most one efa-only interface per network card"},
		{"duplicate pair", `{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}`, "each (networkCardIndex, deviceIndex) pair must be unique"},
		{"unknown interface type", `{networkCardIndex: 0, deviceIndex: 0, interfaceType: efa}`, `Unsupported value: "efa"`},
		{"negative device index", `{networkCardIndex: 0, deviceIndex: -1, interfaceType: interface}`, "should be greater than or equal to 0"},
	} {
		cs = append(cs, validationCase{name: "ec2 networkInterfaces " + c.name, base: b, patch: ni(c.items), want: c.want})
	}
	// spec.kubelet takes every field of the upstream KubeletConfiguration.
	kl := func(fields string) string { return `spec: {kubelet: {` + fields + `}}` }
	for _, c := range []struct{ name, fields, want string }{
		{"serializeImagePulls", `serializeImagePulls: false`, ""},
		{"maxParallelImagePulls", `serializeImagePulls: false, maxParallelImagePulls: 5`, ""},
		{"registerWithTaints", `registerWithTaints: [{key: example.com/x, value: "y", effect: NoSchedule}]`, ""},
		{"logging", `logging: {format: json, verbosity: 2}`, ""},
		{"featureGates", `featureGates: {InPlacePodVerticalScaling: true}`, ""},
		{"containerLogMaxSize", `containerLogMaxSize: 50Mi, containerLogMaxFiles: 3`, ""},
		{"shutdownGracePeriod", `shutdownGracePeriod: 30s, shutdownGracePeriodCriticalPods: 10s`, ""},
		{"cpuManagerPolicy", `cpuManagerPolicy: static, topologyManagerPolicy: single-numa-node`, ""},
		{"reservedMemory", `reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]`, ""},
		{"allowedUnsafeSysctls", `allowedUnsafeSysctls: ["net.core.somaxconn"]`, ""},
		{"kubeAPIQPS", `kubeAPIQPS: 50, kubeAPIBurst: 100`, ""},
		{"imageMaximumGCAge", `imageMaximumGCAge: 168h, imageMinimumGCAge: 2m`, ""},
		{"protectKernelDefaults", `protectKernelDefaults: true, podPidsLimit: 4096`, ""},
		{"modelled next to upstream", `maxPods: 50, serializeImagePulls: false, evictionHard: {memory.available: 5%}`, ""},
		// Karpenter v1.14 refused these at admission; v1.15 made spec.kubelet an open object and refuses them in its
		// controller (ValidationSucceeded=False, InvalidKubeletConfiguration), as Dovetail does: accepted here.
		{"unknown field", `notAKubeletField: true`, ""},
		{"misspelled field", `serialiseImagePulls: false`, ""},
		{"wrong type", `serializeImagePulls: "no"`, ""},
		{"wrong type of a list", `allowedUnsafeSysctls: "net.core.somaxconn"`, ""},
	} {
		cs = append(cs, validationCase{name: "ec2 kubelet " + c.name, base: b, patch: kl(c.fields), want: c.want})
	}
	// Connection tracking and placement groups.
	cs = append(cs,
		validationCase{name: "ec2 connectionTracking empty", base: b, patch: `spec: {connectionTracking: {}}`, want: "spec.connectionTracking: set at least one of"},
		validationCase{name: "ec2 connectionTracking tcp only", base: b, patch: `spec: {connectionTracking: {tcpEstablishedTimeout: 3600}}`},
		validationCase{name: "ec2 connectionTracking udp stream only", base: b, patch: `spec: {connectionTracking: {udpStreamTimeout: 120}}`},
		validationCase{name: "ec2 connectionTracking udp only", base: b, patch: `spec: {connectionTracking: {udpTimeout: 30}}`},
		validationCase{name: "ec2 connectionTracking all", base: b, patch: `spec: {connectionTracking: {tcpEstablishedTimeout: 432000, udpStreamTimeout: 180, udpTimeout: 60}}`},
		validationCase{name: "ec2 connectionTracking tcp too low", base: b, patch: `spec: {connectionTracking: {tcpEstablishedTimeout: 59}}`, want: "should be greater than or equal to 60"},
		validationCase{name: "ec2 placementGroupSelector empty name", base: b, patch: `spec: {placementGroupSelector: {name: ""}}`, want: "spec.placementGroupSelector.name in body should be at least 1 chars long"},
		validationCase{name: "ec2 placementGroupSelector name", base: b, patch: `spec: {placementGroupSelector: {name: my-cluster-pg}}`},
		validationCase{name: "ec2 placementGroupSelector id", base: b, patch: `spec: {placementGroupSelector: {id: pg-0123456789abcdef0}}`},
		validationCase{name: "ec2 placementGroupSelector both", base: b, patch: `spec: {placementGroupSelector: {id: pg-0a, name: x}}`, want: "exactly one of id or name must be set"},
		validationCase{name: "ec2 placementGroupSelector neither", base: b, patch: `spec: {placementGroupSelector: {}}`, want: "exactly one of id or name must be set"},
		validationCase{name: "ec2 placementGroupSelector bad id", base: b, patch: `spec: {placementGroupSelector: {id: group-1}}`, want: "spec.placementGroupSelector.id in body should match"},
	)
	return cs
}

// karpenterDefaults returns obj with the defaults Karpenter v1.14's CRDs apply, written from its generated schemas
// (independently of ours): NodePool disruption {consolidateAfter: 0s, consolidationPolicy:
// WhenEmptyOrUnderutilized, budgets: [{nodes: 10%}]}, each budget's nodes 10%, template expireAfter 720h;
// NodeClaim expireAfter 720h; EC2NodeClass metadataOptions {httpEndpoint: enabled, httpProtocolIPv6: disabled,
// httpPutResponseHopLimit: 1, httpTokens: required}, each field defaulted also inside a partial metadataOptions.
func karpenterDefaults(t *testing.T, obj map[string]interface{}) map[string]interface{} {
	t.Helper()
	out := normalize(t, obj)
	spec, _ := out["spec"].(map[string]interface{})
	setDefault := func(m map[string]interface{}, k string, v interface{}) {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	sub := func(m map[string]interface{}, k string) map[string]interface{} {
		setDefault(m, k, map[string]interface{}{})
		return m[k].(map[string]interface{})
	}
	switch out["kind"] {
	case "NodePool":
		setDefault(spec, "disruption", map[string]interface{}{"consolidateAfter": "0s"})
		d := spec["disruption"].(map[string]interface{})
		// Karpenter v1.14 requires consolidateAfter once disruption is given; Dovetail defaults it to 0s, as
		// Karpenter v1.15 does (see docs/api.md).
		setDefault(d, "consolidateAfter", "0s")
		setDefault(d, "consolidationPolicy", "WhenEmptyOrUnderutilized")
		setDefault(d, "budgets", []interface{}{map[string]interface{}{"nodes": "10%"}})
		for _, bud := range d["budgets"].([]interface{}) {
			setDefault(bud.(map[string]interface{}), "nodes", "10%")
		}
		setDefault(sub(sub(spec, "template"), "spec"), "expireAfter", "720h")
	case "NodeClaim":
		setDefault(spec, "expireAfter", "720h")
	case "EC2NodeClass":
		mo := sub(spec, "metadataOptions")
		setDefault(mo, "httpEndpoint", "enabled")
		setDefault(mo, "httpProtocolIPv6", "disabled")
		setDefault(mo, "httpPutResponseHopLimit", float64(1))
		setDefault(mo, "httpTokens", "required")
	}
	return out
}

// normalize round-trips v through JSON so numbers compare alike (float64) whichever side produced them.
func normalize(t *testing.T, v interface{}) map[string]interface{} {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding: %v", err)
	}
	var out map[string]interface{}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("decoding: %v", err)
	}
	return out
}

// TestKarpenterV114Admission applies every case with strict field validation (what kubectl asks for); accepted ones
// are read back from the dry-run create and their spec compared with karpenterDefaults of the manifest.
func TestKarpenterV114Admission(t *testing.T) { runKarpenterCases(t, v114Cases()) }

// runKarpenterCases applies cases with strict field validation; accepted ones are compared with karpenterDefaults.
func runKarpenterCases(t *testing.T, cases []validationCase) {
	t.Helper()
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			obj := manifest(t, tc.base, tc.patch)
			obj.SetName(objectName(t.Name()))
			want := karpenterDefaults(t, obj.Object)
			var err error
			if tc.update == "" {
				err = kube.Create(ctx, obj, client.DryRunAll, client.FieldValidation("Strict"))
			} else {
				if err := kube.Create(ctx, obj); err != nil {
					t.Fatalf("creating the object to update: %v", err)
				}
				t.Cleanup(func() { _ = kube.Delete(context.Background(), obj) })
				obj = manifest(t, toYAML(t, obj.Object), tc.update)
				want = karpenterDefaults(t, manifest(t, toYAML(t, want), tc.update).Object)
				err = kube.Update(ctx, obj, client.FieldValidation("Strict"))
			}
			if tc.want != "" && strings.HasPrefix(tc.want, "unknown field") {
				// Strict field validation refuses unknown fields as a bad request, before schema validation.
				if err == nil || !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("want a BadRequest error containing %q, got %v", tc.want, err)
				}
				return
			}
			checkResult(t, err, tc.want)
			if tc.want != "" {
				return
			}
			got := normalize(t, obj.Object)
			if diff := cmp.Diff(want["spec"], got["spec"]); diff != "" {
				t.Errorf("stored spec differs from the manifest with Karpenter's defaults (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKarpenterV114CaseCount keeps this suite from shrinking unnoticed.
func TestKarpenterV114CaseCount(t *testing.T) {
	accepted, rejected := countCases(v114Cases())
	t.Logf("Karpenter v1.14 admission cases: %d accepted, %d rejected", accepted, rejected)
	if accepted+rejected < 150 || accepted < 50 || rejected < 50 {
		t.Errorf("want at least 150 cases with 50 of each kind, have %d accepted and %d rejected", accepted, rejected)
	}
}
