package api_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	karpv1alpha1 "github.com/dovetail/dovetail/api/karpenter/v1alpha1"
)

const nodeOverlayBase = `
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: base}
spec:
  requirements:
    - {key: karpenter.k8s.aws/instance-family, operator: In, values: ["m5"]}
`

// nodeOverlayCases follow the schema and the CEL rules of Karpenter v1.14's NodeOverlay CRD: the accepted
// manifests are those Karpenter accepts, the refused ones carry its messages.
func nodeOverlayCases() []validationCase {
	b := nodeOverlayBase
	req := func(key, op, values string) string {
		return fmt.Sprintf(`spec: {requirements: [{key: %s, operator: %s, values: %s}]}`, key, op, values)
	}
	cs := []validationCase{
		{name: "no overlay fields", base: b},
		{name: "empty requirements", base: b, patch: `spec: {requirements: []}`},
		{name: "no requirements", base: b, patch: `spec: {requirements: null}`, want: "spec.requirements: Required value"},
		{name: "no spec", base: b, patch: `spec: null`, want: "spec: Required value"},
		// price
		{name: "price integer", base: b, patch: `spec: {price: "1"}`},
		{name: "price decimal", base: b, patch: `spec: {price: "0.0425"}`},
		{name: "price zero", base: b, patch: `spec: {price: "0"}`},
		{name: "price signed", base: b, patch: `spec: {price: "+1.5"}`, want: "spec.price in body should match"},
		{name: "price negative", base: b, patch: `spec: {price: "-1"}`, want: "spec.price in body should match"},
		{name: "price percent", base: b, patch: `spec: {price: "10%"}`, want: "spec.price in body should match"},
		{name: "price trailing dot", base: b, patch: `spec: {price: "1."}`, want: "spec.price in body should match"},
		{name: "price word", base: b, patch: `spec: {price: "cheap"}`, want: "spec.price in body should match"},
		// priceAdjustment
		{name: "adjustment plus amount", base: b, patch: `spec: {priceAdjustment: "+0.1"}`},
		{name: "adjustment minus amount", base: b, patch: `spec: {priceAdjustment: "-0.25"}`},
		{name: "adjustment minus leading dot", base: b, patch: `spec: {priceAdjustment: "-.5"}`},
		{name: "adjustment minus large amount", base: b, patch: `spec: {priceAdjustment: "-1000"}`},
		{name: "adjustment plus percent", base: b, patch: `spec: {priceAdjustment: "+10%"}`},
		{name: "adjustment plus large percent", base: b, patch: `spec: {priceAdjustment: "+250.5%"}`},
		{name: "adjustment minus percent", base: b, patch: `spec: {priceAdjustment: "-15%"}`},
		{name: "adjustment minus decimal percent", base: b, patch: `spec: {priceAdjustment: "-99.99%"}`},
		{name: "adjustment minus 100 percent", base: b, patch: `spec: {priceAdjustment: "-100%"}`},
		{name: "adjustment minus 101 percent", base: b, patch: `spec: {priceAdjustment: "-101%"}`, want: "spec.priceAdjustment in body should match"},
		{name: "adjustment minus 100.5 percent", base: b, patch: `spec: {priceAdjustment: "-100.5%"}`, want: "spec.priceAdjustment in body should match"},
		{name: "adjustment unsigned", base: b, patch: `spec: {priceAdjustment: "0.1"}`, want: "spec.priceAdjustment in body should match"},
		{name: "adjustment unsigned percent", base: b, patch: `spec: {priceAdjustment: "10%"}`, want: "spec.priceAdjustment in body should match"},
		{name: "adjustment word", base: b, patch: `spec: {priceAdjustment: "+ten"}`, want: "spec.priceAdjustment in body should match"},
		{name: "price and adjustment", base: b, patch: `spec: {price: "1", priceAdjustment: "+1"}`, want: "cannot set both 'price' and 'priceAdjustment'"},
		// capacity
		{name: "capacity device", base: b, patch: `spec: {capacity: {example.com/device: "1"}}`},
		{name: "capacity integer", base: b, patch: `spec: {capacity: {example.com/device: 4}}`},
		{name: "capacity hugepages", base: b, patch: `spec: {capacity: {hugepages-2Mi: 100Mi, hugepages-1Gi: 2Gi}}`},
		{name: "capacity with price", base: b, patch: `spec: {capacity: {example.com/device: "1"}, priceAdjustment: "-10%"}`},
		{name: "capacity not a quantity", base: b, patch: `spec: {capacity: {example.com/device: lots}}`, want: "spec.capacity.example.com/device in body should match"},
		// weight
		{name: "weight 1", base: b, patch: `spec: {weight: 1}`},
		{name: "weight 10000", base: b, patch: `spec: {weight: 10000}`},
		{name: "weight 0", base: b, patch: `spec: {weight: 0}`, want: "spec.weight in body should be greater than or equal to 1"},
		{name: "weight 10001", base: b, patch: `spec: {weight: 10001}`, want: "spec.weight in body should be less than or equal to 10000"},
		// requirements
		{name: "requirement nodepool", base: b, patch: req("karpenter.sh/nodepool", "In", `["default"]`)},
		{name: "requirement capacity type", base: b, patch: req("karpenter.sh/capacity-type", "In", `["spot"]`)},
		{name: "requirement instance type", base: b, patch: req("node.kubernetes.io/instance-type", "In", `["m5.large", "c5.large"]`)},
		{name: "requirement zone NotIn", base: b, patch: req("topology.kubernetes.io/zone", "NotIn", `["us-west-2a"]`)},
		{name: "requirement custom label", base: b, patch: req("example.com/team", "In", `["a"]`)},
		{name: "requirement kubernetes.io key", base: b, patch: req("kubernetes.io/custom", "In", `["a"]`)},
		{name: "requirement k8s.io key", base: b, patch: req("k8s.io/custom", "In", `["a"]`)},
		{name: "requirement aws well-known", base: b, patch: req("karpenter.k8s.aws/instance-cpu", "Gt", `["4"]`)},
		{name: "requirement Exists", base: b, patch: `spec: {requirements: [{key: example.com/gpu, operator: Exists}]}`},
		{name: "requirement DoesNotExist", base: b, patch: `spec: {requirements: [{key: example.com/gpu, operator: DoesNotExist}]}`},
		{name: "requirement hostname", base: b, patch: req("kubernetes.io/hostname", "In", `["a"]`), want: `label "kubernetes.io/hostname" is restricted`},
		{name: "requirement karpenter.sh key", base: b, patch: req("karpenter.sh/initialized", "In", `["true"]`), want: `label domain "karpenter.sh" is restricted`},
		{name: "requirement karpenter.sh subdomain", base: b, patch: req("x.karpenter.sh/y", "In", `["true"]`), want: `label domain "karpenter.sh" is restricted`},
		{name: "requirement aws unknown", base: b, patch: req("karpenter.k8s.aws/nope", "In", `["a"]`), want: `label domain "karpenter.k8s.aws" is restricted`},
		{name: "requirement bad key", base: b, patch: req(`"-bad"`, "In", `["a"]`), want: "spec.requirements[0].key in body should match"},
		{name: "requirement key too long", base: b, patch: req("example.com/"+strings.Repeat("a", 310), "In", `["a"]`), want: "may not be more than 316"},
		{name: "requirement unknown operator", base: b, patch: req("example.com/a", "Ge", `["1"]`), want: `Unsupported value: "Ge"`},
		{name: "requirement In without values", base: b, patch: `spec: {requirements: [{key: example.com/a, operator: In}]}`, want: "requirements with operator 'In' must have a value defined"},
		{name: "requirement In empty values", base: b, patch: req("example.com/a", "In", `[]`), want: "requirements with operator 'In' must have a value defined"},
		{name: "requirement NotIn without values", base: b, patch: `spec: {requirements: [{key: example.com/a, operator: NotIn}]}`, want: "requirements with operator 'NotIn' must have a value defined"},
		{name: "requirement without operator", base: b, patch: `spec: {requirements: [{key: example.com/a}]}`, want: "operator: Required value"},
		{name: "requirement without key", base: b, patch: `spec: {requirements: [{operator: Exists}]}`, want: "key: Required value"},
	}
	for _, op := range []string{"Gt", "Lt", "Gte", "Lte"} {
		cs = append(cs,
			validationCase{name: "requirement " + op, base: b, patch: req("karpenter.k8s.aws/instance-cpu", op, `["8"]`)},
			validationCase{name: "requirement " + op + " zero", base: b, patch: req("karpenter.k8s.aws/instance-cpu", op, `["0"]`)},
			validationCase{name: "requirement " + op + " negative", base: b, patch: req("karpenter.k8s.aws/instance-cpu", op, `["-1"]`),
				want: "must have a single positive integer value"},
			validationCase{name: "requirement " + op + " not a number", base: b, patch: req("karpenter.k8s.aws/instance-cpu", op, `["four"]`),
				want: "must have a single positive integer value"},
			validationCase{name: "requirement " + op + " two values", base: b, patch: req("karpenter.k8s.aws/instance-cpu", op, `["1", "2"]`),
				want: "must have a single positive integer value"},
			validationCase{name: "requirement " + op + " no values", base: b, patch: `spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: ` + op + `}]}`,
				want: "must have a single positive integer value"},
		)
	}
	var many []string
	for i := 0; i < 101; i++ {
		many = append(many, fmt.Sprintf(`{key: example.com/k%d, operator: Exists}`, i))
	}
	cs = append(cs,
		validationCase{name: "100 requirements", base: b, patch: `spec: {requirements: [` + strings.Join(many[:100], ", ") + `]}`},
		validationCase{name: "101 requirements", base: b, patch: `spec: {requirements: [` + strings.Join(many, ", ") + `]}`, want: "must have at most 100 items"},
		validationCase{name: "update price", base: b, update: `spec: {price: "0.5"}`},
		validationCase{name: "update to both prices", base: b + "  price: \"1\"\n", update: `spec: {priceAdjustment: "-10%"}`, want: "cannot set both"},
	)
	return cs
}

func TestNodeOverlayValidation(t *testing.T) { runCases(t, nodeOverlayCases()) }

// TestNodeOverlayCRD checks the names kubectl shows and that the Go types round-trip through the API server,
// status included.
func TestNodeOverlayCRD(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "config", "crd", "karpenter.sh_nodeoverlays.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	type summary struct {
		Kind, Scope, Version string
		ShortNames, Columns  []string
		Categories           []string
	}
	got := summary{Kind: crd.Spec.Names.Kind, Scope: string(crd.Spec.Scope), Version: crd.Spec.Versions[0].Name,
		ShortNames: crd.Spec.Names.ShortNames, Categories: crd.Spec.Names.Categories}
	for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
		got.Columns = append(got.Columns, c.Name)
	}
	want := summary{Kind: "NodeOverlay", Scope: "Cluster", Version: "v1alpha1", ShortNames: []string{"overlays"},
		Columns: []string{"Ready", "Age", "Weight"}, Categories: []string{"karpenter"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CRD names (-want +got):\n%s", diff)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := &karpv1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: "round-trip"},
		Spec: karpv1alpha1.NodeOverlaySpec{
			Requirements:    []karpv1alpha1.NodeSelectorRequirement{{Key: "karpenter.k8s.aws/instance-family", Operator: "In", Values: []string{"c5"}}},
			PriceAdjustment: ptr.To("-10%"),
			Capacity:        corev1.ResourceList{"example.com/device": resource.MustParse("1")},
			Weight:          ptr.To[int32](5),
		},
	}
	if err := kube.Create(ctx, o); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.Background(), o) })
	o.SetValidation(karpv1alpha1.ReasonConflict, "conflicts with overlay b")
	if err := kube.Status().Update(ctx, o); err != nil {
		t.Fatalf("status update: %v", err)
	}
	back := &karpv1alpha1.NodeOverlay{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(o), back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(o.Spec, back.Spec); diff != "" {
		t.Errorf("spec round trip (-want +got):\n%s", diff)
	}
	ready := back.GetCondition("Ready")
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != karpv1alpha1.ReasonConflict {
		t.Errorf("Ready condition after a conflict: %+v", ready)
	}
}
