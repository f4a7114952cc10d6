package chart

import (
	"context"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/pkg/test"
)

// TestApplyDryRun renders the chart with every optional object turned on, and with the values files written for
// Karpenter's chart, and applies each object with a server-side dry run to a real kube-apiserver (envtest, with
// Dovetail's CRDs): the API server's own validation and defaulting must accept all of them. ServiceMonitor is
// skipped: its CRD belongs to the Prometheus Operator.
func TestApplyDryRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver")
	}
	s, err := test.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	env := test.StartEnv(t, s)
	cases := map[string]map[string]any{
		"defaults": {"settings": map[string]any{"clusterName": "prod-1"}},
		"everything on": {
			"settings":       map[string]any{"clusterName": "prod-1", "region": "us-east-1", "interruptionQueue": "prod-1"},
			"teardown":       map[string]any{"enabled": true},
			"dashboards":     map[string]any{"enabled": true, "namespace": "default"},
			"serviceMonitor": map[string]any{"enabled": true},
			"controller": map[string]any{
				"resources": map[string]any{"limits": map[string]any{"memory": "1Gi"}, "requests": map[string]any{"cpu": "1", "memory": "1Gi"}},
			},
			"terminationGracePeriodSeconds": 60,
		},
	}
	for _, name := range karpenterValuesFiles {
		cases[name] = readValuesFile(t, name)
	}
	names := make([]string, 0, len(cases))
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			objs := objects(t, cases[name])
			for _, k := range keys(objs) {
				u := objs[k]
				if u.GroupVersionKind().Group == "monitoring.coreos.com" {
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err := env.Client.Patch(ctx, u.DeepCopy(), client.Apply, client.FieldOwner("chart-test"), client.ForceOwnership, client.DryRunAll)
				cancel()
				if err != nil {
					t.Errorf("%s refused by the API server: %v", k, err)
				}
			}
			if len(objs) == 0 {
				t.Fatal("rendered nothing")
			}
		})
	}
	// The dry run must be able to fail: an object the API server refuses.
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "bad", "namespace": "kube-system"},
		"spec":     map[string]any{"replicas": -1},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := env.Client.Patch(ctx, bad, client.Apply, client.FieldOwner("chart-test"), client.DryRunAll); err == nil {
		t.Error("the API server accepted an invalid Deployment in dry run: the check above proves nothing")
	}
}
