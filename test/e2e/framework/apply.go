package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the server-side-apply field manager of objects the tests and the demo apply.
const FieldOwner = "dovetail-e2e"

// ReadObjects decodes every object of a multi-document YAML (or JSON) file.
func ReadObjects(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return DecodeObjects(b)
}

// DecodeObjects decodes every object of a multi-document YAML (or JSON) document; empty documents are skipped.
func DecodeObjects(b []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("document %d: apiVersion and kind are required", i)
		}
		out = append(out, u)
	}
}

// Apply server-side applies the objects, in order.
func Apply(ctx context.Context, c client.Client, objs ...*unstructured.Unstructured) error {
	for _, o := range objs {
		o = o.DeepCopy()
		o.SetManagedFields(nil)
		o.SetResourceVersion("")
		if err := c.Patch(ctx, o, client.Apply, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil { //nolint:staticcheck // Apply patches are the simplest way to apply unstructured YAML.
			return fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// ApplyFile reads a YAML file and server-side applies every object in it.
func ApplyFile(ctx context.Context, c client.Client, path string) error {
	objs, err := ReadObjects(path)
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return Apply(ctx, c, objs...)
}
