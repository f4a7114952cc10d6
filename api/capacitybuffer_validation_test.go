package api_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	autoscalingv1beta1 "github.com/dovetail/dovetail/api/autoscaling/v1beta1"
)

const capacityBufferBase = `
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata:
  name: base
  namespace: default
spec:
  podTemplateRef: {name: buffer-shape}
  replicas: 4
`

// capacityBufferCases are the admission rules of Karpenter v1.14's capacitybuffers.autoscaling.x-k8s.io CRD:
// two CEL rules on spec, minimums on replicas and percentage, minLength on the reference names, the quantity
// pattern on limits, and the required fields of the references and of spec.
func capacityBufferCases() []validationCase {
	b := capacityBufferBase
	scalable := `spec: {podTemplateRef: null, replicas: null, scalableRef: {apiGroup: apps, kind: Deployment, name: web}}`
	return []validationCase{
		// Accepted.
		{name: "cb podTemplateRef with replicas", base: b},
		{name: "cb podTemplateRef with limits only", base: b, patch: `spec: {replicas: null, limits: {cpu: "8", memory: 16Gi}}`},
		{name: "cb podTemplateRef with replicas and limits", base: b, patch: `spec: {limits: {cpu: 4000m, nvidia.com/gpu: 2}}`},
		{name: "cb replicas zero", base: b, patch: `spec: {replicas: 0}`},
		{name: "cb scalableRef alone", base: b, patch: scalable},
		{name: "cb scalableRef with percentage", base: b, patch: `spec: {podTemplateRef: null, replicas: null, percentage: 20, scalableRef: {apiGroup: apps, kind: Deployment, name: web}}`},
		{name: "cb scalableRef with percentage replicas and limits", base: b, patch: `spec: {podTemplateRef: null, replicas: 2, percentage: 50, limits: {cpu: "10"}, scalableRef: {kind: StatefulSet, name: db}}`},
		{name: "cb scalableRef core group", base: b, patch: `spec: {podTemplateRef: null, replicas: null, scalableRef: {apiGroup: "", kind: ReplicationController, name: rc}}`},
		{name: "cb limits alone no ref", base: b, patch: `spec: {podTemplateRef: null, replicas: null, limits: {cpu: "2"}}`},
		{name: "cb empty spec", base: b, patch: `spec: {podTemplateRef: null, replicas: null}`},
		{name: "cb percentage zero", base: b, patch: `spec: {podTemplateRef: null, replicas: null, percentage: 0, scalableRef: {kind: Deployment, name: web}}`},
		{name: "cb provisioningStrategy other", base: b, patch: `spec: {provisioningStrategy: example.com/standby}`},
		{name: "cb update replicas", base: b, update: `spec: {replicas: 8}`},
		{name: "cb update to scalableRef", base: b, update: scalable},

		// Rejected.
		{name: "cb both refs", base: b, patch: `spec: {scalableRef: {kind: Deployment, name: web}}`, want: "You must define either PodTemplateRef or ScalableRef, but not both"},
		{name: "cb podTemplateRef without replicas or limits", base: b, patch: `spec: {replicas: null}`, want: "If podTemplateRef is set, replicas or limits must also be set"},
		{name: "cb podTemplateRef with percentage only", base: b, patch: `spec: {replicas: null, percentage: 10}`, want: "If podTemplateRef is set, replicas or limits must also be set"},
		{name: "cb replicas negative", base: b, patch: `spec: {replicas: -1}`, want: "spec.replicas: Invalid value: -1"},
		{name: "cb percentage negative", base: b, patch: `spec: {podTemplateRef: null, replicas: null, percentage: -5, scalableRef: {kind: Deployment, name: web}}`, want: "spec.percentage: Invalid value: -5"},
		{name: "cb podTemplateRef empty name", base: b, patch: `spec: {podTemplateRef: {name: ""}}`, want: "spec.podTemplateRef.name: Invalid value"},
		{name: "cb podTemplateRef no name", base: b, patch: `spec: {podTemplateRef: {name: null}}`, want: "spec.podTemplateRef.name: Required value"},
		{name: "cb scalableRef no kind", base: b, patch: `spec: {podTemplateRef: null, scalableRef: {name: web}}`, want: "spec.scalableRef.kind: Required value"},
		{name: "cb scalableRef no name", base: b, patch: `spec: {podTemplateRef: null, scalableRef: {kind: Deployment}}`, want: "spec.scalableRef.name: Required value"},
		{name: "cb scalableRef empty kind", base: b, patch: `spec: {podTemplateRef: null, scalableRef: {kind: "", name: web}}`, want: "spec.scalableRef.kind: Invalid value"},
		{name: "cb scalableRef empty name", base: b, patch: `spec: {podTemplateRef: null, scalableRef: {kind: Deployment, name: ""}}`, want: "spec.scalableRef.name: Invalid value"},
		{name: "cb limits not a quantity", base: b, patch: `spec: {limits: {cpu: lots}}`, want: "spec.limits.cpu"},
		{name: "cb replicas not an integer", base: b, patch: `spec: {replicas: "four"}`, want: "spec.replicas"},
		{name: "cb spec missing", base: b, patch: `spec: null`, want: "spec: Required value"},
		{name: "cb update to both refs", base: b, update: `spec: {scalableRef: {kind: Deployment, name: web}}`, want: "but not both"},
	}
}

func TestCapacityBufferValidation(t *testing.T) { runCases(t, capacityBufferCases()) }

// TestCapacityBufferDefaults checks the one default the CRD applies, provisioningStrategy, and that the status
// fields round-trip through the status subresource.
func TestCapacityBufferDefaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obj := manifest(t, capacityBufferBase, "")
	obj.SetName("cb-defaults")
	if err := kube.Create(ctx, obj); err != nil {
		t.Fatalf("creating: %v", err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.Background(), obj) })
	var cb autoscalingv1beta1.CapacityBuffer
	if err := kube.Get(ctx, client.ObjectKeyFromObject(obj), &cb); err != nil {
		t.Fatalf("reading back: %v", err)
	}
	if got := cb.Spec.ProvisioningStrategy; got == nil || *got != autoscalingv1beta1.ActiveCapacityStrategy {
		t.Errorf("spec.provisioningStrategy = %v, want %q", got, autoscalingv1beta1.ActiveCapacityStrategy)
	}
	replicas, gen := int32(4), int64(3)
	cb.Status = autoscalingv1beta1.CapacityBufferStatus{
		PodTemplateRef:        &autoscalingv1beta1.LocalObjectRef{Name: "buffer-shape"},
		Replicas:              &replicas,
		PodTemplateGeneration: &gen,
		ProvisioningStrategy:  cb.Spec.ProvisioningStrategy,
	}
	want := cb.Status.DeepCopy()
	if err := kube.Status().Update(ctx, &cb); err != nil {
		t.Fatalf("updating status: %v", err)
	}
	var got autoscalingv1beta1.CapacityBuffer
	if err := kube.Get(ctx, client.ObjectKeyFromObject(obj), &got); err != nil {
		t.Fatalf("reading back: %v", err)
	}
	if diff := cmp.Diff(*want, got.Status); diff != "" {
		t.Errorf("status round trip (-want +got):\n%s", diff)
	}
}

// TestCapacityBufferCRDNames checks what kubectl shows: kind, short name, category, namespaced scope, the
// printer columns and the status subresource of Karpenter v1.14's CRD.
func TestCapacityBufferCRDNames(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "config", "crd", "autoscaling.x-k8s.io_capacitybuffers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	type summary struct {
		Group, Kind, Plural, Scope string
		ShortNames, Categories     []string
		Versions, Columns          []string
		Status                     bool
	}
	got := summary{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind, Plural: crd.Spec.Names.Plural, Scope: string(crd.Spec.Scope),
		ShortNames: crd.Spec.Names.ShortNames, Categories: crd.Spec.Names.Categories}
	for _, v := range crd.Spec.Versions {
		got.Versions = append(got.Versions, v.Name)
		for _, c := range v.AdditionalPrinterColumns {
			got.Columns = append(got.Columns, c.Name)
		}
		got.Status = v.Subresources != nil && v.Subresources.Status != nil
	}
	want := summary{Group: "autoscaling.x-k8s.io", Kind: "CapacityBuffer", Plural: "capacitybuffers", Scope: "Namespaced",
		ShortNames: []string{"cb"}, Categories: []string{"autoscaling"}, Versions: []string{"v1beta1"},
		Columns: []string{"Strategy", "PodTemplate", "Replicas", "ConditionsType", "ConditionsStatus", "ConditionsReason", "Age"}, Status: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CRD names (-want +got):\n%s", diff)
	}
}

// TestCapacityBufferDocExamples applies (server-side dry run, in the default namespace) the CapacityBuffers of
// docs/capacitybuffer.md, so the documented manifests cannot drift from the CRD.
func TestCapacityBufferDocExamples(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "capacitybuffer.md"))
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for i, block := range strings.Split(string(raw), "```yaml\n")[1:] {
		block = strings.SplitN(block, "```", 2)[0]
		for _, doc := range strings.Split(block, "\n---\n") {
			obj := manifest(t, doc, "")
			if obj.GetKind() != "CapacityBuffer" {
				continue
			}
			obj.SetNamespace("default")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := kube.Create(ctx, obj, client.DryRunAll)
			cancel()
			if err != nil {
				t.Errorf("yaml block %d: CapacityBuffer %s rejected: %v", i+1, obj.GetName(), err)
			}
			applied++
		}
	}
	if applied < 2 {
		t.Errorf("applied %d CapacityBuffers from docs/capacitybuffer.md, want at least 2", applied)
	}
}
