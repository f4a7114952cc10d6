package api_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// TestExamplesApply applies (server-side dry run) every NodePool, NodeClaim and EC2NodeClass found in the
// repository's examples/ folder, so published examples cannot drift from the CRDs.
func TestExamplesApply(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot(), "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("reading %s: %v", f, err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			var obj map[string]interface{}
			if err := dec.Decode(&obj); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("decoding %s: %v", f, err)
			}
			u := &unstructured.Unstructured{Object: obj}
			group := u.GroupVersionKind().Group
			if group != karpv1.Group && group != awsv1.Group {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := kube.Create(ctx, u, client.DryRunAll)
			cancel()
			if err != nil {
				t.Errorf("%s: %s %s rejected: %v", filepath.Base(f), u.GetKind(), u.GetName(), err)
			}
			applied++
		}
	}
	t.Logf("applied %d objects from examples/", applied)
}
