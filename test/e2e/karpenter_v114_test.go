//go:build e2e

package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestGteLteNodePool: a NodePool bounding karpenter.k8s.aws/instance-cpu with Gte 4 and Lte 8 launches
// nodes whose vCPU count is within the bounds.
func TestGteLteNodePool(t *testing.T) {
	ctx := context.Background()
	const pool = "gte-lte"
	setupPool(t, pool, framework.PoolOptions{CapacityTypes: []string{"on-demand"}, Requirements: []map[string]any{
		{"key": awsv1.LabelInstanceCPU, "operator": "Gte", "values": []any{"4"}},
		{"key": awsv1.LabelInstanceCPU, "operator": "Lte", "values": []any{"8"}},
	}})
	// Small pods: left alone, the cheapest type would have 2 vCPUs.
	if err := env.Client.Create(ctx, framework.Deployment(pool, "bounded", pool, 2, "250m", "256Mi")); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "bounded"}, 2, 90*time.Second)
	nodes, err := env.Nodes(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) == 0 {
		t.Fatalf("no nodes in nodepool %s", pool)
	}
	for _, n := range nodes {
		cpu := n.Status.Capacity.Cpu().Value()
		label, err := strconv.Atoi(n.Labels[awsv1.LabelInstanceCPU])
		if err != nil || cpu < 4 || cpu > 8 || int64(label) != cpu {
			t.Errorf("node %s (%s) has %d vCPUs (label %q), want 4..8", n.Name, n.Labels[corev1.LabelInstanceTypeStable], cpu, n.Labels[awsv1.LabelInstanceCPU])
		}
	}
}

// TestWindows2025Node: an EC2NodeClass with the windows2025 alias launches a node that comes up with
// the Windows labels in the simulator and runs a Windows pod.
func TestWindows2025Node(t *testing.T) {
	ctx := context.Background()
	const pool = "windows2025"
	setupPool(t, pool, framework.PoolOptions{CapacityTypes: []string{"on-demand"}, Alias: "windows2025@latest",
		Requirements: []map[string]any{{"key": corev1.LabelOSStable, "operator": "In", "values": []any{"windows"}}}})
	d := framework.Deployment(pool, "win", pool, 1, "500m", "512Mi")
	d.Spec.Template.Spec.NodeSelector[corev1.LabelOSStable] = "windows"
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "win"}, 1, 90*time.Second)
	nodes, err := env.Nodes(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) == 0 {
		t.Fatalf("no nodes in nodepool %s", pool)
	}
	for _, n := range nodes {
		if n.Labels[corev1.LabelOSStable] != "windows" || n.Labels[corev1.LabelWindowsBuild] != awsv1.WindowsBuild2025 {
			t.Errorf("node %s labels os=%q windows-build=%q, want windows and %s", n.Name,
				n.Labels[corev1.LabelOSStable], n.Labels[corev1.LabelWindowsBuild], awsv1.WindowsBuild2025)
		}
	}
}
