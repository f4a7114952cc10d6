package karpentercrds

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// karpenterVersion is the release compared; its module zip holds the CRDs in pkg/apis/crds.
const karpenterVersion = "v1.15.0"

// crdFiles are the CRDs compared, by file name in Karpenter's pkg/apis/crds and in config/crd.
var crdFiles = map[string]string{
	"NodePool":       "karpenter.sh_nodepools.yaml",
	"NodeClaim":      "karpenter.sh_nodeclaims.yaml",
	"EC2NodeClass":   "karpenter.k8s.aws_ec2nodeclasses.yaml",
	"NodeOverlay":    "karpenter.sh_nodeoverlays.yaml",
	"CapacityBuffer": "autoscaling.x-k8s.io_capacitybuffers.yaml",
}

// Reasons of the exceptions below.
const (
	celRules = "CEL rules written by Dovetail with its own wording (rules and messages); the admission suite " +
		"(api/*_test.go, api/karpenter_v114_test.go, api/karpenter_v115_test.go) checks that they accept and refuse " +
		"the same manifests as Karpenter's"
	nonEmptyList = "minItems: 1 where Karpenter has the rule self.size() != 0: both refuse an empty list, with " +
		"another message"
	atomicList  = "x-kubernetes-list-type atomic is what a list without a list type is; only Karpenter writes it out"
	granularMap = "x-kubernetes-map-type granular is what a map without a map type is; only Karpenter writes it out"
	statusOnly  = "status is written by the controller through the status subresource, never admitted from a " +
		"user's manifest; Dovetail's status schema follows its own status types"
	ignoredOnArray = "Karpenter sets maxLength and pattern on the values list itself, where the API server does " +
		"not apply them (they constrain strings): values of any length and syntax are accepted by both, as the " +
		"v1.14 cases \"np In value of 1000 characters\" and \"np value with a slash\" check"
	taintSyntax = "taint keys and values follow the syntax Kubernetes requires of a Node's taints (a qualified " +
		"name of at most 316 characters, a label value of 1 to 63 characters): Karpenter's patterns also let a " +
		"value contain a prefix with a slash, which the Node could not carry"
	sameKeySyntax      = "the same language of qualified names as Karpenter's pattern, written differently"
	volumeSizeQuantity = "volumeSize is a resource.Quantity (integer or string) in Dovetail; strings are held " +
		"to Karpenter's size pattern (64Ti at most), and an integer (bytes), which Karpenter refuses, is accepted"
	stricterByChoice = "one of the refusals docs/api.md lists under \"Stricter than Karpenter\": Karpenter admits " +
		"the manifest but can never run it (an id only containing subnet-/sg-/ami-, a placement group name EC2 " +
		"refuses)"
	specRequired = "Dovetail requires spec on an EC2NodeClass: Karpenter's schema lets an object without spec " +
		"through, which has no AMI, subnet or security group terms and so can launch nothing"
)

// exceptions are the differences kept on purpose, keyed as differences() writes them ("Kind path: aspect"), each
// with its reason. Every difference Karpenter v1.15.0 brought (spec.kubelet opened, enclaveOptions, the budget
// reason Unhealthy, consolidateAfter defaulted) is matched, so none of them is listed.
var exceptions = map[string]string{
	"EC2NodeClass v1.spec.amiSelectorTerms[].id: pattern":                                   stricterByChoice,
	"EC2NodeClass v1.spec.placementGroupSelector.name: maxLength":                           stricterByChoice,
	"EC2NodeClass v1.spec.securityGroupSelectorTerms[].id: pattern":                         stricterByChoice,
	"EC2NodeClass v1.spec.subnetSelectorTerms[].id: pattern":                                stricterByChoice,
	"EC2NodeClass v1.spec.blockDeviceMappings: x-kubernetes-validations":                    celRules,
	"EC2NodeClass v1.spec.blockDeviceMappings[].ebs.volumeSize: pattern":                    volumeSizeQuantity,
	"EC2NodeClass v1.spec.blockDeviceMappings[].ebs.volumeSize: type":                       volumeSizeQuantity,
	"EC2NodeClass v1.spec.blockDeviceMappings[].ebs.volumeSize: x-kubernetes-int-or-string": volumeSizeQuantity,
	"EC2NodeClass v1.spec.blockDeviceMappings[].ebs: x-kubernetes-validations":              celRules,
	"EC2NodeClass v1.spec.networkInterfaces: x-kubernetes-validations":                      celRules,
	"EC2NodeClass v1.spec.placementGroupSelector: x-kubernetes-validations":                 celRules,
	"EC2NodeClass v1.spec.securityGroupSelectorTerms: minItems":                             nonEmptyList,
	"EC2NodeClass v1.spec.securityGroupSelectorTerms: x-kubernetes-validations":             celRules,
	"EC2NodeClass v1.spec.subnetSelectorTerms: minItems":                                    nonEmptyList,
	"EC2NodeClass v1.spec.subnetSelectorTerms: x-kubernetes-validations":                    celRules,
	"EC2NodeClass v1.spec.tags: x-kubernetes-validations":                                   celRules,
	"EC2NodeClass v1.spec: x-kubernetes-validations":                                        celRules,
	"EC2NodeClass v1.status.capacityReservations[].id: pattern":                             statusOnly,
	"EC2NodeClass v1.status.capacityReservations[].instanceMatchCriteria: enum":             statusOnly,
	"EC2NodeClass v1.status.capacityReservations[].ownerID: pattern":                        statusOnly,
	"EC2NodeClass v1.status.capacityReservations[]: required":                               statusOnly,
	"EC2NodeClass v1.status.conditions: x-kubernetes-list-map-keys":                         statusOnly,
	"EC2NodeClass v1.status.conditions: x-kubernetes-list-type":                             statusOnly,
	"EC2NodeClass v1: required":                                                             specRequired,
	"NodeClaim v1.spec.requirements: x-kubernetes-list-type":                                atomicList,
	"NodeClaim v1.spec.requirements: x-kubernetes-validations":                              celRules,
	"NodeClaim v1.spec.requirements[].key: pattern":                                         sameKeySyntax,
	"NodeClaim v1.spec.requirements[].key: x-kubernetes-validations":                        celRules,
	"NodeClaim v1.spec.requirements[].values: maxLength":                                    ignoredOnArray,
	"NodeClaim v1.spec.requirements[].values: pattern":                                      ignoredOnArray,
	"NodeClaim v1.spec.startupTaints: x-kubernetes-list-type":                               atomicList,
	"NodeClaim v1.spec.startupTaints[].key: maxLength":                                      taintSyntax,
	"NodeClaim v1.spec.startupTaints[].key: pattern":                                        taintSyntax,
	"NodeClaim v1.spec.startupTaints[].value: maxLength":                                    taintSyntax,
	"NodeClaim v1.spec.startupTaints[].value: minLength":                                    taintSyntax,
	"NodeClaim v1.spec.startupTaints[].value: pattern":                                      taintSyntax,
	"NodeClaim v1.spec.taints: x-kubernetes-list-type":                                      atomicList,
	"NodeClaim v1.spec.taints[].key: maxLength":                                             taintSyntax,
	"NodeClaim v1.spec.taints[].key: pattern":                                               taintSyntax,
	"NodeClaim v1.spec.taints[].value: maxLength":                                           taintSyntax,
	"NodeClaim v1.spec.taints[].value: minLength":                                           taintSyntax,
	"NodeClaim v1.spec.taints[].value: pattern":                                             taintSyntax,
	"NodeClaim v1.status.conditions[].reason: minLength":                                    statusOnly,
	"NodeClaim v1.status.conditions[].reason: pattern":                                      statusOnly,
	"NodeClaim v1.status.conditions[]: required":                                            statusOnly,
	"NodeOverlay v1alpha1.spec.requirements: x-kubernetes-list-type":                        atomicList,
	"NodeOverlay v1alpha1.spec.requirements: x-kubernetes-validations":                      celRules,
	"NodeOverlay v1alpha1.spec.requirements[].key: x-kubernetes-validations":                celRules,
	"NodeOverlay v1alpha1.spec.requirements[].values: maxLength":                            ignoredOnArray,
	"NodeOverlay v1alpha1.spec.requirements[].values: pattern":                              ignoredOnArray,
	"NodePool v1.spec.disruption.budgets: x-kubernetes-list-type":                           atomicList,
	"NodePool v1.spec.template.metadata.annotations: x-kubernetes-map-type":                 granularMap,
	"NodePool v1.spec.template.metadata.labels: x-kubernetes-validations":                   celRules,
	"NodePool v1.spec.template.spec.requirements: x-kubernetes-list-type":                   atomicList,
	"NodePool v1.spec.template.spec.requirements: x-kubernetes-validations":                 celRules,
	"NodePool v1.spec.template.spec.requirements[].key: pattern":                            sameKeySyntax,
	"NodePool v1.spec.template.spec.requirements[].key: x-kubernetes-validations":           celRules,
	"NodePool v1.spec.template.spec.requirements[].values: maxLength":                       ignoredOnArray,
	"NodePool v1.spec.template.spec.requirements[].values: pattern":                         ignoredOnArray,
	"NodePool v1.spec.template.spec.startupTaints: x-kubernetes-list-type":                  atomicList,
	"NodePool v1.spec.template.spec.startupTaints[].key: maxLength":                         taintSyntax,
	"NodePool v1.spec.template.spec.startupTaints[].key: pattern":                           taintSyntax,
	"NodePool v1.spec.template.spec.startupTaints[].value: maxLength":                       taintSyntax,
	"NodePool v1.spec.template.spec.startupTaints[].value: minLength":                       taintSyntax,
	"NodePool v1.spec.template.spec.startupTaints[].value: pattern":                         taintSyntax,
	"NodePool v1.spec.template.spec.taints: x-kubernetes-list-type":                         atomicList,
	"NodePool v1.spec.template.spec.taints[].key: maxLength":                                taintSyntax,
	"NodePool v1.spec.template.spec.taints[].key: pattern":                                  taintSyntax,
	"NodePool v1.spec.template.spec.taints[].value: maxLength":                              taintSyntax,
	"NodePool v1.spec.template.spec.taints[].value: minLength":                              taintSyntax,
	"NodePool v1.spec.template.spec.taints[].value: pattern":                                taintSyntax,
	"NodePool v1.spec: x-kubernetes-validations":                                            celRules,
	"NodePool v1.status.nodes: default":                                                     statusOnly,
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// karpenterCRDs reads pkg/apis/crds of github.com/aws/karpenter-provider-aws@version from the Go module proxy (the
// zip is used even when `go mod download` then complains of the module's newer go directive).
func karpenterCRDs(t *testing.T, version string) map[string][]byte {
	t.Helper()
	mod := "github.com/aws/karpenter-provider-aws"
	cmd := exec.Command("go", "mod", "download", "-json", mod+"@"+version)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, runErr := cmd.Output()
	var info struct{ Zip, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		t.Fatalf("go mod download %s@%s: %v (%v)", mod, version, err, runErr)
	}
	if info.Zip == "" {
		t.Fatalf("go mod download %s@%s: %s", mod, version, info.Error)
	}
	zr, err := zip.OpenReader(info.Zip)
	if err != nil {
		t.Fatalf("opening %s: %v", info.Zip, err)
	}
	defer zr.Close()
	prefix := mod + "@" + version + "/pkg/apis/crds/"
	files := map[string][]byte{}
	for _, f := range zr.File {
		if !strings.HasPrefix(f.Name, prefix) || f.FileInfo().IsDir() {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimPrefix(f.Name, prefix)] = b
	}
	return files
}

// facts flattens the schema of each served version of a CRD into path -> aspect -> value (JSON text).
type facts map[string]map[string]string

func schemaFacts(t *testing.T, raw []byte) facts {
	t.Helper()
	var crd struct {
		Spec struct {
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema map[string]interface{} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatalf("parsing CRD: %v", err)
	}
	out := facts{}
	for _, v := range crd.Spec.Versions {
		walk(out, v.Name, v.Schema.OpenAPIV3Schema)
	}
	return out
}

// aspects are the schema keywords compared; descriptions and titles are not.
var aspects = []string{"type", "format", "enum", "default", "required", "minimum", "maximum", "exclusiveMinimum",
	"exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "pattern",
	"nullable", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string", "x-kubernetes-list-type",
	"x-kubernetes-list-map-keys", "x-kubernetes-map-type", "x-kubernetes-embedded-resource"}

func walk(out facts, path string, s map[string]interface{}) {
	f := map[string]string{}
	for _, a := range aspects {
		v, ok := s[a]
		if !ok {
			continue
		}
		if a == "enum" || a == "required" {
			v = sortedStrings(v)
		}
		b, _ := json.Marshal(v)
		f[a] = string(b)
	}
	if rules, ok := s["x-kubernetes-validations"].([]interface{}); ok {
		var rs []string
		for _, r := range rules {
			m, _ := r.(map[string]interface{})
			rs = append(rs, fmt.Sprint(m["rule"]))
		}
		sort.Strings(rs)
		b, _ := json.Marshal(rs)
		f["x-kubernetes-validations"] = string(b)
	}
	out[path] = f
	if props, ok := s["properties"].(map[string]interface{}); ok {
		for name, p := range props {
			if m, ok := p.(map[string]interface{}); ok {
				walk(out, path+"."+name, m)
			}
		}
	}
	if items, ok := s["items"].(map[string]interface{}); ok {
		walk(out, path+"[]", items)
	}
	if ap, ok := s["additionalProperties"].(map[string]interface{}); ok {
		walk(out, path+"{}", ap)
	}
}

func sortedStrings(v interface{}) interface{} {
	list, ok := v.([]interface{})
	if !ok {
		return v
	}
	var out []string
	for _, x := range list {
		b, _ := json.Marshal(x)
		out = append(out, string(b))
	}
	sort.Strings(out)
	return out
}

// differences lists, as "Kind path: aspect karpenter=<v> dovetail=<v>", every aspect that differs, and
// "Kind path: only in karpenter|dovetail" for paths one side lacks.
func differences(kind string, karpenter, dovetail facts) map[string]string {
	out := map[string]string{}
	for path, kf := range karpenter {
		df, ok := dovetail[path]
		if !ok {
			out[kind+" "+path+": only in karpenter"] = ""
			continue
		}
		for _, a := range append(slices.Clone(aspects), "x-kubernetes-validations") {
			if kf[a] != df[a] {
				out[kind+" "+path+": "+a] = fmt.Sprintf("karpenter=%s dovetail=%s", orNone(kf[a]), orNone(df[a]))
			}
		}
	}
	for path := range dovetail {
		if _, ok := karpenter[path]; !ok {
			out[kind+" "+path+": only in dovetail"] = ""
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// TestCRDsMatchKarpenter115 fails on a difference not listed in exceptions and on an exception that no longer
// matches a difference.
func TestCRDsMatchKarpenter115(t *testing.T) {
	theirs := karpenterCRDs(t, karpenterVersion)
	all := map[string]string{}
	for kind, file := range crdFiles {
		k, ok := theirs[file]
		if !ok {
			t.Fatalf("Karpenter %s has no pkg/apis/crds/%s", karpenterVersion, file)
		}
		d, err := os.ReadFile(filepath.Join(repoRoot(), "config", "crd", file))
		if err != nil {
			t.Fatal(err)
		}
		for key, v := range differences(kind, schemaFacts(t, k), schemaFacts(t, d)) {
			all[key] = v
		}
	}
	var unexpected, stale []string
	for key, v := range all {
		if _, ok := exceptions[key]; !ok {
			unexpected = append(unexpected, key+" "+v)
		}
	}
	for key := range exceptions {
		if _, ok := all[key]; !ok {
			stale = append(stale, key)
		}
	}
	sort.Strings(unexpected)
	sort.Strings(stale)
	if len(unexpected) > 0 {
		t.Errorf("%d differences from Karpenter %s's CRDs are not listed in exceptions:\n%s", len(unexpected), karpenterVersion, strings.Join(unexpected, "\n"))
	}
	if len(stale) > 0 {
		t.Errorf("exceptions that no longer match a difference (remove them):\n%s", strings.Join(stale, "\n"))
	}
	t.Logf("%d differences, all listed", len(all))
}
