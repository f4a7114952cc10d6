//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestDoNotDisruptSurvivesDrift (scenario 2, first half): two nodes of a NodePool drift when its template
// changes. The node running an ordinary Deployment pod is replaced: a new node launches, the old one drains and
// goes, and the pod runs on the new node. The node running a pod annotated karpenter.sh/do-not-disrupt stays,
// Drifted but not disrupted, with a DisruptionBlocked event that names the pod.
func TestDoNotDisruptSurvivesDrift(t *testing.T) {
	ctx := context.Background()
	const pool = "dnd-drift"
	// m5.xlarge has 4 vCPUs: with 3 cpu a pod, each pod gets a node of its own.
	setupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"m5.xlarge"}, CapacityTypes: []string{"on-demand"}, ConsolidateAfter: "Never"})
	if err := env.Client.Create(ctx, framework.Deployment(pool, "plain", pool, 1, "3", "1Gi")); err != nil {
		t.Fatal(err)
	}
	precious := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: pool, Name: "precious", Labels: map[string]string{"app": "precious"},
			Annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: karpv1.DoNotDisruptValue}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			NodeSelector:                  map[string]string{karpv1.NodePoolLabelKey: pool},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}}}},
		},
	}
	if err := env.Client.Create(ctx, precious); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "plain"}, 1, 2*time.Minute)
	waitRunning(t, pool, map[string]string{"app": "precious"}, 1, 2*time.Minute)
	p := &corev1.Pod{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(precious), p); err != nil {
		t.Fatal(err)
	}
	preciousNode := p.Spec.NodeName
	plainPods, err := env.Pods(ctx, pool, map[string]string{"app": "plain"})
	if err != nil || len(plainPods) != 1 {
		t.Fatalf("plain pods: %d, %v", len(plainPods), err)
	}
	plainNode := plainPods[0].Spec.NodeName
	if plainNode == preciousNode {
		t.Fatalf("both pods on node %s; the scenario needs one node each", plainNode)
	}
	claims := claimsByNode(t, pool)
	preciousClaim, plainClaim := claims[preciousNode], claims[plainNode]
	if preciousClaim == "" || plainClaim == "" {
		t.Fatalf("nodeclaims by node: %v", claims)
	}

	// Change the template: both NodeClaims drift.
	np := &karpv1.NodePool{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(np.DeepCopy())
	if np.Spec.Template.Labels == nil {
		np.Spec.Template.Labels = map[string]string{}
	}
	np.Spec.Template.Labels["dovetail.test/revision"] = "2"
	if err := env.Client.Patch(ctx, np, patch); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()

	// The plain node is replaced and its pod runs on the replacement.
	err = framework.Poll(ctx, 3*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		now := claimsByNode(t, pool)
		pods, err := env.Pods(ctx, pool, map[string]string{"app": "plain"})
		if err != nil {
			return false, "", err
		}
		running := ""
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running = p.Spec.NodeName
			}
		}
		_, oldStill := now[plainNode]
		status := fmt.Sprintf("nodeclaims by node %v, plain pod running on %q", now, running)
		return !oldStill && running != "" && running != plainNode && running != preciousNode, status, nil
	})
	if err != nil {
		t.Fatalf("drifted node %s (nodeclaim %s) was not replaced: %v\ncontroller log:\n%s", plainNode, plainClaim, err, env.LogTail("dovetail", 40))
	}
	t.Logf("drifted node replaced %.1fs after the template change", time.Since(changed).Seconds())

	// The precious node is drifted, but stays through further passes (the controller polls every 10 s).
	err = framework.Consistently(ctx, 25*time.Second, time.Second, func(ctx context.Context) error {
		nc := &karpv1.NodeClaim{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: preciousClaim}, nc); err != nil {
			return fmt.Errorf("nodeclaim %s of the do-not-disrupt pod: %w", preciousClaim, err)
		}
		if nc.DeletionTimestamp != nil {
			return fmt.Errorf("nodeclaim %s of the do-not-disrupt pod is being deleted", preciousClaim)
		}
		if !nc.IsTrue(karpv1.ConditionTypeDrifted) {
			return fmt.Errorf("nodeclaim %s is not Drifted: %+v", preciousClaim, nc.Status.Conditions)
		}
		p := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(precious), p); err != nil {
			return fmt.Errorf("do-not-disrupt pod: %w", err)
		}
		if p.DeletionTimestamp != nil || p.Spec.NodeName != preciousNode {
			return fmt.Errorf("do-not-disrupt pod moved or is being deleted (node %q)", p.Spec.NodeName)
		}
		n := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: preciousNode}, n); err != nil {
			return fmt.Errorf("node of the do-not-disrupt pod: %w", err)
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == karpv1.DisruptedTaintKey {
				return fmt.Errorf("node %s of the do-not-disrupt pod has the %s taint", preciousNode, karpv1.DisruptedTaintKey)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	events, err := env.Events(ctx, "default", "NodeClaim", preciousClaim)
	if err != nil {
		t.Fatal(err)
	}
	if !anyContains(events, "DisruptionBlocked: ", "pod "+pool+"/precious") {
		t.Errorf("no DisruptionBlocked event on nodeclaim %s naming the pod; events: %q", preciousClaim, events)
	}
}

// TestEmptyNodeIsConsolidated: a Deployment scaled down leaves a node empty; after consolidateAfter (5 s) the
// empty node is deleted and its instance terminated, while the node that still runs a replica stays.
func TestEmptyNodeIsConsolidated(t *testing.T) {
	ctx := context.Background()
	const pool = "empty"
	setupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"m5.xlarge"}, CapacityTypes: []string{"on-demand"}, ConsolidateAfter: "5s"})
	dep := framework.Deployment(pool, "web", pool, 2, "3", "1Gi")
	if err := env.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	waitRunning(t, pool, labels, 2, 2*time.Minute)
	if n := len(claimsByNode(t, pool)); n != 2 {
		t.Fatalf("%d nodes for two 3-cpu replicas on m5.xlarge, want 2", n)
	}
	patch := client.MergeFrom(dep.DeepCopy())
	dep.Spec.Replicas = ptr.To[int32](1)
	if err := env.Client.Patch(ctx, dep, patch); err != nil {
		t.Fatal(err)
	}
	scaled := time.Now()
	var keep string
	err := framework.Poll(ctx, 2*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		pods, err := env.Pods(ctx, pool, labels)
		if err != nil {
			return false, "", err
		}
		byNode := claimsByNode(t, pool)
		var live []string
		for _, p := range pods {
			if p.DeletionTimestamp == nil {
				live = append(live, p.Spec.NodeName)
			}
		}
		if len(byNode) == 1 && len(live) == 1 {
			if _, ok := byNode[live[0]]; ok {
				keep = live[0]
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("nodeclaims by node %v, replicas on %v", byNode, live), nil
	})
	if err != nil {
		t.Fatalf("empty node not consolidated: %v\ncontroller log:\n%s", err, env.LogTail("dovetail", 40))
	}
	t.Logf("empty node removed %.1fs after the scale-down; the replica stayed on %s", time.Since(scaled).Seconds(), keep)
}

// TestUnderutilizedNodesConsolidated: four 1.5-cpu replicas run two to a 4-vCPU node; scaled down to two, the
// ReplicaSet removes one replica from each node (the ones given a lower pod-deletion-cost), leaving both nodes
// half used. Consolidation (its budget opened for
// Underutilized) deletes one of the nodes and its replica moves to the other: replacing both by one new
// m5.xlarge (the pool's only type) would end the same way with a launch and twice the evictions, so multi-node
// consolidation does not make that command (as Karpenter's does not). Both replicas end up Running on the node
// that stayed, and the NodeClaim removed carries a DisruptionTerminating event naming Underutilized.
func TestUnderutilizedNodesConsolidated(t *testing.T) {
	ctx := context.Background()
	const pool = "underused"
	setupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"m5.xlarge"}, CapacityTypes: []string{"on-demand"},
		ConsolidateAfter: "5s", Budgets: []map[string]any{{"nodes": "100%"}}})
	dep := framework.Deployment(pool, "web", pool, 4, "1500m", "512Mi")
	if err := env.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	waitRunning(t, pool, labels, 4, 2*time.Minute)
	before := claimsByNode(t, pool)
	if len(before) != 2 {
		t.Fatalf("%d nodes for four 1.5-cpu replicas on m5.xlarge, want 2: %v", len(before), before)
	}
	// One replica a node goes first on scale-down.
	pods, err := env.Pods(ctx, pool, labels)
	if err != nil {
		t.Fatal(err)
	}
	marked := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		if marked[p.Spec.NodeName] {
			continue
		}
		marked[p.Spec.NodeName] = true
		pp := client.MergeFrom(p.DeepCopy())
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations["controller.kubernetes.io/pod-deletion-cost"] = "-100"
		if err := env.Client.Patch(ctx, p, pp); err != nil {
			t.Fatal(err)
		}
	}
	if len(marked) != 2 {
		t.Fatalf("replicas on %d nodes, want 2", len(marked))
	}
	patch := client.MergeFrom(dep.DeepCopy())
	dep.Spec.Replicas = ptr.To[int32](2)
	if err := env.Client.Patch(ctx, dep, patch); err != nil {
		t.Fatal(err)
	}
	scaled := time.Now()
	err = framework.Poll(ctx, 3*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		pods, err := env.Pods(ctx, pool, labels)
		if err != nil {
			return false, "", err
		}
		now := claimsByNode(t, pool)
		var running []string
		for _, p := range pods {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				running = append(running, p.Spec.NodeName)
			}
		}
		status := fmt.Sprintf("nodeclaims by node %v, running replicas on %v", now, running)
		if len(now) != 1 || len(running) != 2 {
			return false, status, nil
		}
		for _, n := range running {
			if _, ok := now[n]; !ok {
				return false, status, nil
			}
		}
		return true, status, nil
	})
	if err != nil {
		t.Fatalf("two half-used nodes were not consolidated into one: %v\ncontroller log:\n%s", err, env.LogTail("dovetail", 40))
	}
	t.Logf("two half-used nodes consolidated into one %.1fs after the scale-down", time.Since(scaled).Seconds())
	final := claimsByNode(t, pool)
	for node, claim := range final {
		if before[node] != claim {
			t.Errorf("nodeclaim %s (node %s) was launched by the consolidation; want one of %v to stay", claim, node, before)
		}
	}
	removed := 0
	for node, claim := range before {
		if final[node] == claim {
			continue // the node that stayed and took the other's replica
		}
		removed++
		events, err := env.Events(ctx, "default", "NodeClaim", claim)
		if err != nil {
			t.Fatal(err)
		}
		if !anyContains(events, "DisruptionTerminating: ", "underutilized") {
			t.Errorf("nodeclaim %s (node %s): no DisruptionTerminating event for underutilized; events: %q", claim, node, events)
		}
	}
	if removed == 0 {
		t.Errorf("neither of the nodes %v was removed; nodes now %v", before, final)
	}
}

// claimsByNode returns the pool's NodeClaims that are not being deleted, by node name.
func claimsByNode(t *testing.T, pool string) map[string]string {
	t.Helper()
	claims, err := env.NodeClaims(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range claims {
		if c.DeletionTimestamp == nil && c.Status.NodeName != "" {
			out[c.Status.NodeName] = c.Name
		}
	}
	return out
}
