// Command crdpatch adds schema rules to the generated CRDs that controller-gen cannot express through
// markers: the fields of embedded Kubernetes types (corev1.NodeSelectorRequirement inside requirements,
// corev1.Taint) carry no kubebuilder markers, so their patterns, enums, length limits and the label-domain
// rules are added here. It rewrites the files in place and is idempotent; hack/generate.sh runs it after
// controller-gen.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// Patterns of Kubernetes names, written for the OpenAPI (RE2-compatible) pattern dialect.
const (
	qualifiedNamePattern = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	labelValuePattern    = `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	maxLabelKeyLength    = 316
	maxLabelValueLength  = 63
	domainExpr           = `%s.find('^[^/]+/')`
)

type rule struct{ Rule, Message string }

// celList renders the keys that lie in domain d as a sorted CEL list literal, so the CRD rules are generated
// from the same constants the Go code uses.
func celList(keys []string, d string) string {
	var in []string
	for _, k := range keys {
		if karpv1.InDomain(karpv1.LabelDomain(k), d) {
			in = append(in, "'"+k+"'")
		}
	}
	sort.Strings(in)
	return "[" + strings.Join(in, ", ") + "]"
}

func wellKnownKubernetes() string {
	return celList(karpv1.WellKnownLabels().UnsortedList(), karpv1.LabelDomainKubernetes)
}

func wellKnownAWS() string {
	return celList(awsv1.AWSWellKnownLabels().UnsortedList(), awsv1.LabelDomain)
}

// inDomain returns a CEL expression true when the label key v is in domain d or one of its subdomains.
func inDomain(v, d string) string {
	dom := fmt.Sprintf(domainExpr, v)
	return fmt.Sprintf("(%s == '%s/' || %s.endsWith('.%s/'))", dom, d, dom, d)
}

// labelKeyRules returns the label-domain rules for a single key expression v, as used by requirements
// (allowNodePool) and template labels. where names the field in messages.
func labelKeyRules(v, where string, allowNodePool bool) []rule {
	// karpenter.sh/nodepool passes the domain rule; where it is not allowed a separate rule says so.
	karpenterAllowed := `['karpenter.sh/capacity-type', 'karpenter.sh/nodepool']`
	rules := []rule{
		{
			Rule:    fmt.Sprintf("%s != 'kubernetes.io/hostname'", v),
			Message: where + ": label \"kubernetes.io/hostname\" is restricted (the kubelet sets it)",
		},
		{
			Rule: fmt.Sprintf("%s in %s || %s || %s || !%s", v, wellKnownKubernetes(),
				inDomain(v, "node.kubernetes.io"), inDomain(v, "node-restriction.kubernetes.io"), inDomain(v, "kubernetes.io")),
			Message: where + ": label domain \"kubernetes.io\" is restricted; only well-known labels and the node.kubernetes.io and node-restriction.kubernetes.io domains are allowed",
		},
		{
			Rule:    fmt.Sprintf("%s || !%s", inDomain(v, "kops.k8s.io"), inDomain(v, "k8s.io")),
			Message: where + ": label domain \"k8s.io\" is restricted; only kops.k8s.io is allowed",
		},
		{
			Rule:    fmt.Sprintf("%s in %s || !%s", v, karpenterAllowed, inDomain(v, "karpenter.sh")),
			Message: where + ": label domain \"karpenter.sh\" is restricted; only karpenter.sh/capacity-type and karpenter.sh/nodepool are allowed",
		},
		{
			Rule:    fmt.Sprintf("%s in %s || !%s", v, wellKnownAWS(), inDomain(v, "karpenter.k8s.aws")),
			Message: where + ": label domain \"karpenter.k8s.aws\" is restricted; only the well-known karpenter.k8s.aws labels are allowed",
		},
	}
	if !allowNodePool {
		rules = append([]rule{{
			Rule:    fmt.Sprintf("%s != 'karpenter.sh/nodepool'", v),
			Message: where + ": label \"karpenter.sh/nodepool\" is restricted (Dovetail sets it)",
		}}, rules...)
	}
	return rules
}

func rulesValue(rules []rule) []interface{} {
	out := make([]interface{}, 0, len(rules))
	for _, r := range rules {
		out = append(out, map[string]interface{}{"rule": r.Rule, "message": r.Message})
	}
	return out
}

// at walks a path of property names through nested "properties" (and "items" for "[]") of a schema.
func at(schema map[string]interface{}, path ...string) (map[string]interface{}, error) {
	cur := schema
	for _, p := range path {
		var next interface{}
		switch p {
		case "[]":
			next = cur["items"]
		case "{}":
			next = cur["additionalProperties"]
		default:
			props, _ := cur["properties"].(map[string]interface{})
			next = props[p]
		}
		m, ok := next.(map[string]interface{})
		if !ok {
			return nil, fmt.Errorf("schema path %s: %q not found", strings.Join(path, "."), p)
		}
		cur = m
	}
	return cur, nil
}

func patchRequirementItem(item map[string]interface{}, where string, allowNodePool bool) error {
	key, err := at(item, "key")
	if err != nil {
		return err
	}
	key["maxLength"] = maxLabelKeyLength
	key["pattern"] = qualifiedNamePattern
	key["x-kubernetes-validations"] = rulesValue(labelKeyRules("self", where, allowNodePool))
	op, err := at(item, "operator")
	if err != nil {
		return err
	}
	op["enum"] = []interface{}{"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"}
	// Requirement values are not limited in length or syntax at admission, as in Karpenter.
	return nil
}

func patchTaintItem(item map[string]interface{}) error {
	key, err := at(item, "key")
	if err != nil {
		return err
	}
	key["minLength"] = 1
	key["maxLength"] = maxLabelKeyLength
	key["pattern"] = qualifiedNamePattern
	val, err := at(item, "value")
	if err != nil {
		return err
	}
	// A taint value, when given, is a non-empty label value (Karpenter refuses "" too).
	val["minLength"] = 1
	val["maxLength"] = maxLabelValueLength
	val["pattern"] = labelValuePattern
	eff, err := at(item, "effect")
	if err != nil {
		return err
	}
	eff["enum"] = []interface{}{"NoSchedule", "PreferNoSchedule", "NoExecute"}
	return nil
}

// nodeClaimSpecPatches patches a NodeClaim spec or a NodePool template spec.
func nodeClaimSpecPatches(spec map[string]interface{}, where string, allowNodePool bool) error {
	item, err := at(spec, "requirements", "[]")
	if err != nil {
		return err
	}
	if err := patchRequirementItem(item, where+".requirements[].key", allowNodePool); err != nil {
		return err
	}
	for _, f := range []string{"taints", "startupTaints"} {
		t, err := at(spec, f, "[]")
		if err != nil {
			return err
		}
		if err := patchTaintItem(t); err != nil {
			return err
		}
	}
	return nil
}

func patchNodePool(root map[string]interface{}) error {
	spec, err := at(root, "spec", "template", "spec")
	if err != nil {
		return err
	}
	if err := nodeClaimSpecPatches(spec, "spec.template.spec", false); err != nil {
		return err
	}
	labels, err := at(root, "spec", "template", "metadata", "labels")
	if err != nil {
		return err
	}
	val, err := at(labels, "{}")
	if err != nil {
		return err
	}
	val["maxLength"] = maxLabelValueLength
	val["pattern"] = labelValuePattern
	existing, _ := labels["x-kubernetes-validations"].([]interface{})
	var keyRules []rule
	keyRules = append(keyRules, rule{
		Rule:    fmt.Sprintf("self.all(x, size(x) <= %d && x.matches(r'%s'))", maxLabelKeyLength, qualifiedNamePattern),
		Message: "spec.template.metadata.labels: keys must be qualified names ([prefix/]name, at most 316 characters)",
	})
	for _, r := range labelKeyRules("x", "spec.template.metadata.labels", true) {
		keyRules = append(keyRules, rule{Rule: "self.all(x, " + r.Rule + ")", Message: r.Message})
	}
	labels["x-kubernetes-validations"] = append(existing, rulesValue(keyRules)...)
	return nil
}

func patchNodeClaim(root map[string]interface{}) error {
	spec, err := at(root, "spec")
	if err != nil {
		return err
	}
	return nodeClaimSpecPatches(spec, "spec", true)
}

// patchNodeOverlay adds the label-domain rules of NodeOverlay requirement keys. As in Karpenter v1.14, an overlay
// may select on karpenter.sh/nodepool and on any kubernetes.io or k8s.io key (it only reads labels); the
// karpenter.sh domain (but capacity-type and nodepool), kubernetes.io/hostname and the karpenter.k8s.aws domain
// (but its well-known labels) are refused.
func patchNodeOverlay(root map[string]interface{}) error {
	key, err := at(root, "spec", "requirements", "[]", "key")
	if err != nil {
		return err
	}
	where := "spec.requirements[].key"
	var rules []rule
	for _, r := range labelKeyRules("self", where, true) {
		if strings.Contains(r.Message, `"kubernetes.io"`) || strings.Contains(r.Message, `"k8s.io"`) {
			continue
		}
		rules = append(rules, r)
	}
	key["x-kubernetes-validations"] = rulesValue(rules)
	return nil
}

func patchFile(path string, patch func(map[string]interface{}) error) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading CRD: %w", err)
	}
	var crd map[string]interface{}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		return fmt.Errorf("parsing %s: %w", path, err)
	}
	spec, _ := crd["spec"].(map[string]interface{})
	versions, _ := spec["versions"].([]interface{})
	if len(versions) == 0 {
		return fmt.Errorf("%s: no versions", path)
	}
	for _, v := range versions {
		vm, _ := v.(map[string]interface{})
		schema, _ := vm["schema"].(map[string]interface{})
		root, ok := schema["openAPIV3Schema"].(map[string]interface{})
		if !ok {
			return fmt.Errorf("%s: version without openAPIV3Schema", path)
		}
		if err := patch(root); err != nil {
			return fmt.Errorf("patching %s: %w", path, err)
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: crdpatch <crd directory>")
		os.Exit(2)
	}
	dir := os.Args[1]
	patches := []struct {
		file  string
		patch func(map[string]interface{}) error
	}{
		{"karpenter.sh_nodepools.yaml", patchNodePool},
		{"karpenter.sh_nodeclaims.yaml", patchNodeClaim},
		{"karpenter.sh_nodeoverlays.yaml", patchNodeOverlay},
	}
	for _, p := range patches {
		if err := patchFile(filepath.Join(dir, p.file), p.patch); err != nil {
			fmt.Fprintln(os.Stderr, "crdpatch:", err)
			os.Exit(1)
		}
	}
}
