//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestBalancedKeepsSmallSavings: two NodePools alike but for their consolidation policy each run two
// 1-cpu/5Gi replicas on one m5.xlarge ($0.192/h). Scaled to one replica, the node could be replaced by an r5.large
// ($0.126/h): 34% of the node's price for disrupting all of the NodePool's pods. WhenEmptyOrUnderutilized replaces
// it; Balanced (k = 2: savings fraction / disruption fraction must reach 0.5) keeps it, and `dovetailctl explain
// node` says so with the score.
func TestBalancedKeepsSmallSavings(t *testing.T) {
	ctx := context.Background()
	types := []string{"m5.xlarge", "r5.large"}
	pools := []struct{ name, policy string }{
		{"balanced", string(karpv1.ConsolidationPolicyBalanced)},
		{"underutil", string(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized)},
	}
	labels := map[string]string{"app": "web"}
	deps := map[string]*appsv1.Deployment{}
	// The pools start with m5.xlarge only and are given r5.large once their replicas run: allowed from the
	// start, a replica the provisioner saw alone (the ReplicaSet creates them one after the other) would get an
	// r5.large of its own. Requirements are not part of the NodePool's hash: nothing drifts.
	for _, p := range pools {
		setupPool(t, p.name, framework.PoolOptions{InstanceTypes: types[:1], CapacityTypes: []string{"on-demand"},
			ConsolidateAfter: "5s", ConsolidationPolicy: p.policy, Budgets: []map[string]any{{"nodes": "100%"}}})
		dep := framework.Deployment(p.name, "web", p.name, 2, "1", "5Gi")
		if err := env.Client.Create(ctx, dep); err != nil {
			t.Fatal(err)
		}
		deps[p.name] = dep
	}
	before := map[string]map[string]string{}
	for _, p := range pools {
		waitRunning(t, p.name, labels, 2, 2*time.Minute)
		nodes, err := env.Nodes(ctx, p.name)
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != 1 || nodes[0].Labels[corev1.LabelInstanceTypeStable] != "m5.xlarge" {
			t.Fatalf("nodepool %s: want one m5.xlarge for two 1-cpu/5Gi replicas, got %d nodes %v", p.name, len(nodes), nodeTypes(nodes))
		}
		before[p.name] = claimsByNode(t, p.name)
		np := &karpv1.NodePool{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: p.name}, np); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(np.DeepCopy())
		found := false
		for i := range np.Spec.Template.Spec.Requirements {
			if r := &np.Spec.Template.Spec.Requirements[i]; r.Key == corev1.LabelInstanceTypeStable {
				r.Values, found = types, true
			}
		}
		if !found {
			t.Fatalf("nodepool %s has no %s requirement", p.name, corev1.LabelInstanceTypeStable)
		}
		if err := env.Client.Patch(ctx, np, patch); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pools {
		dep := deps[p.name]
		patch := client.MergeFrom(dep.DeepCopy())
		dep.Spec.Replicas = ptr.To[int32](1)
		if err := env.Client.Patch(ctx, dep, patch); err != nil {
			t.Fatal(err)
		}
	}
	scaled := time.Now()
	err := framework.Poll(ctx, 3*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		nodes, err := env.Nodes(ctx, "underutil")
		if err != nil {
			return false, "", err
		}
		status := fmt.Sprintf("underutil nodes %v", nodeTypes(nodes))
		return len(nodes) == 1 && nodes[0].Labels[corev1.LabelInstanceTypeStable] == "r5.large", status, nil
	})
	if err != nil {
		t.Fatalf("WhenEmptyOrUnderutilized did not replace its m5.xlarge by an r5.large: %v\ncontroller log:\n%s", err, env.LogTail("dovetail", 40))
	}
	t.Logf("WhenEmptyOrUnderutilized replaced its node %.1fs after the scale-down", time.Since(scaled).Seconds())

	// The Balanced node was consolidatable for as long as the other one: it had the same passes to go.
	if got := claimsByNode(t, "balanced"); fmt.Sprint(got) != fmt.Sprint(before["balanced"]) {
		t.Errorf("Balanced nodepool's nodes changed: before %v, now %v", before["balanced"], got)
	}
	nodes, err := env.Nodes(ctx, "balanced")
	if err != nil || len(nodes) != 1 {
		t.Fatalf("balanced nodes: %d (%v)", len(nodes), err)
	}
	out := runCtl(t, filepath.Join(framework.RepoRoot(), "bin", "dovetailctl"), "explain", "node", nodes[0].Name)
	for _, want := range []string{"stays [ConsolidationScore]", "score"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain node output lacks %q:\n%s", want, out)
		}
	}
}

func nodeTypes(nodes []corev1.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.Name+"="+n.Labels[corev1.LabelInstanceTypeStable])
	}
	return out
}
