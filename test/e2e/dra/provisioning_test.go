//go:build e2e

package dra

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// setupPool starts the controller, applies the DeviceClasses, and a NodePool and EC2NodeClass named name and a
// namespace of the same name, removed when the test ends (framework.Stack.SetupPool).
func setupPool(t *testing.T, name string, opts framework.PoolOptions) {
	t.Helper()
	startController(t)
	applyDeviceClasses(t)
	env.SetupPool(t, name, opts)
}

// claimDeployment returns a Deployment of the pool whose pods each use one claim from the template.
func claimDeployment(pool, name, template string, replicas int32) client.Object {
	d := framework.Deployment(pool, name, pool, replicas, "100m", "128Mi")
	framework.UseClaimTemplate(&d.Spec.Template.Spec, template)
	return d
}

// runningPods waits until n pods of the app are Running and returns them.
func runningPods(t *testing.T, namespace, app string, n int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := framework.Poll(context.Background(), timeout, time.Second, func(ctx context.Context) (bool, string, error) {
		p, err := env.Pods(ctx, namespace, map[string]string{"app": app})
		pods = pods[:0]
		var states []string
		for _, x := range p {
			if x.Status.Phase == corev1.PodRunning && x.DeletionTimestamp == nil {
				pods = append(pods, x)
			} else {
				states = append(states, x.Name+"="+string(x.Status.Phase)+lastCondition(&x))
			}
		}
		return len(pods) >= n, fmt.Sprintf("%d running; %s", len(pods), strings.Join(states, ", ")), err
	})
	if err != nil {
		t.Fatalf("waiting for %d Running pods of %s: %v\n%s", n, app, err, env.Describe(namespace, namespace))
	}
	return pods
}

// checkOnOwnDevices fails the test unless every pod's claim is allocated from devices of the node the pod runs on,
// whose instance type is one of types (when given); it returns the nodes the pods run on.
func checkOnOwnDevices(t *testing.T, pods []corev1.Pod, types ...string) map[string]bool {
	t.Helper()
	ctx := context.Background()
	nodes := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		devs, err := allocation(ctx, p)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, d := range devs {
			if pool := strings.SplitN(d, "/", 3)[1]; pool != p.Spec.NodeName {
				t.Errorf("pod %s on %s uses device %s of another node", p.Name, p.Spec.NodeName, d)
			}
		}
		nodes[p.Spec.NodeName] = true
	}
	if len(types) == 0 {
		return nodes
	}
	for n := range nodes {
		node := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: n}, node); err != nil {
			t.Fatal(err)
		}
		it := node.Labels[corev1.LabelInstanceTypeStable]
		ok := false
		for _, want := range types {
			ok = ok || strings.HasPrefix(it, want)
		}
		if !ok {
			t.Errorf("node %s is a %s, want one of %v", n, it, types)
		}
	}
	return nodes
}

// TestGPUClaimsGetNodesWithThatGPU: a Deployment whose pods each claim one NVIDIA L4 gets nodes that carry L4s
// (the g6 and gr6 families), and its pods run on them with their claims allocated there.
func TestGPUClaimsGetNodesWithThatGPU(t *testing.T) {
	const pool = "draproduct"
	setupPool(t, pool, framework.PoolOptions{Categories: []string{"c", "m", "g", "p"}})
	ctx := context.Background()
	tmpl := framework.ClaimTemplate(pool, "l4", "", framework.DeviceRequest{Name: "gpu", Class: "gpu.nvidia.com", Count: 1,
		Selectors: []string{"device.attributes['gpu.nvidia.com'].productName == 'NVIDIA L4'"}})
	if err := env.Client.Create(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, claimDeployment(pool, "l4", tmpl.Name, 3)); err != nil {
		t.Fatal(err)
	}
	pods := runningPods(t, pool, "l4", 3, 2*time.Minute)
	checkOnOwnDevices(t, pods, "g6.", "gr6.")
}

// TestGPUsAndEFAOnOnePCIeRoot: a claim for two GPUs and one EFA interface under one PCIe root lands on a type
// that has them so (its devices share the resource.kubernetes.io/pcieRoot value).
func TestGPUsAndEFAOnOnePCIeRoot(t *testing.T) {
	const pool = "drapcie"
	setupPool(t, pool, framework.PoolOptions{Categories: []string{"g", "p"}})
	ctx := context.Background()
	tmpl := framework.ClaimTemplate(pool, "gpus-efa", "resource.kubernetes.io/pcieRoot",
		framework.DeviceRequest{Name: "gpu", Class: "gpu.nvidia.com", Count: 2},
		framework.DeviceRequest{Name: "efa", Class: "dranet", Count: 1})
	if err := env.Client.Create(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, claimDeployment(pool, "gpus-efa", tmpl.Name, 1)); err != nil {
		t.Fatal(err)
	}
	pods := runningPods(t, pool, "gpus-efa", 1, 2*time.Minute)
	checkOnOwnDevices(t, pods)
	slices, err := slicesOf(ctx, pods[0].Spec.NodeName)
	if err != nil {
		t.Fatal(err)
	}
	devs, err := allocation(ctx, &pods[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := map[string]bool{}
	for _, d := range devs {
		parts := strings.SplitN(d, "/", 3)
		roots[deviceAttribute(slices, parts[0], parts[2], "resource.kubernetes.io/pcieRoot")] = true
	}
	if len(devs) != 3 || len(roots) != 1 {
		t.Errorf("allocated %v on PCIe roots %v; want 2 GPUs and 1 EFA on one root", devs, roots)
	}
}

// TestMIGClaimsPackOnOneNode: pods that each claim one 1g.5gb MIG partition of an A100 pack onto one node (a
// p4d.24xlarge offers 56 such partitions), each pod on a partition of its own.
func TestMIGClaimsPackOnOneNode(t *testing.T) {
	const pool = "dramig"
	setupPool(t, pool, framework.PoolOptions{Categories: []string{"g", "p"}})
	ctx := context.Background()
	tmpl := framework.ClaimTemplate(pool, "mig", "", framework.DeviceRequest{Name: "gpu", Class: "mig.nvidia.com", Count: 1,
		Selectors: []string{"device.attributes['gpu.nvidia.com'].profile == '1g.5gb'"}})
	if err := env.Client.Create(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, claimDeployment(pool, "mig", tmpl.Name, 5)); err != nil {
		t.Fatal(err)
	}
	pods := runningPods(t, pool, "mig", 5, 2*time.Minute)
	if nodes := checkOnOwnDevices(t, pods); len(nodes) != 1 {
		t.Errorf("MIG pods run on %d nodes %v, want one", len(nodes), nodes)
	}
	seen := map[string]string{}
	for i := range pods {
		devs, _ := allocation(ctx, &pods[i])
		for _, d := range devs {
			if other, dup := seen[d]; dup {
				t.Errorf("pods %s and %s share partition %s", other, pods[i].Name, d)
			}
			seen[d] = pods[i].Name
		}
	}
	if claims, err := env.NodeClaims(ctx, pool); err != nil || len(claims) != 1 {
		t.Errorf("pool %s has %d NodeClaims (%v), want one", pool, len(claims), err)
	}
}

// TestConsolidationKeepsClaimPodsOnTheirDevices: a pod claiming one L4 first runs on a large L4 node (the pool
// allows only g6.12xlarge); once the pool allows cheaper types, consolidation replaces the node, and the
// replacement must carry an L4 (a g6) rather than be the cheapest node for the pod's CPU and memory. At no
// point is the pod bound to a node without its device.
func TestConsolidationKeepsClaimPodsOnTheirDevices(t *testing.T) {
	const pool = "draconsolidate"
	// On-demand only: a spot node would be replaced only by spot with SpotToSpotConsolidation, which is off.
	setupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"g6.12xlarge"}, CapacityTypes: []string{"on-demand"},
		ConsolidateAfter: "0s", Budgets: []map[string]any{{"nodes": "100%"}}})
	ctx := context.Background()
	tmpl := framework.ClaimTemplate(pool, "l4", "", framework.DeviceRequest{Name: "gpu", Class: "gpu.nvidia.com", Count: 1,
		Selectors: []string{"device.attributes['gpu.nvidia.com'].productName == 'NVIDIA L4'"}})
	if err := env.Client.Create(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, claimDeployment(pool, "l4", tmpl.Name, 1)); err != nil {
		t.Fatal(err)
	}
	first := runningPods(t, pool, "l4", 1, 2*time.Minute)
	checkOnOwnDevices(t, first, "g6.12xlarge")
	firstNode := first[0].Spec.NodeName

	// Widen the pool: cheaper CPU-only types and the small L4 types.
	objs, err := framework.NodePool(pool, framework.PoolOptions{InstanceTypes: []string{"g6.12xlarge", "g6.xlarge", "g6.2xlarge", "m5.large", "c5.large"},
		CapacityTypes: []string{"on-demand"}, ConsolidateAfter: "0s", Budgets: []map[string]any{{"nodes": "100%"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.Apply(ctx, env.Client, objs...); err != nil {
		t.Fatal(err)
	}
	err = framework.Poll(ctx, 2*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		pods, err := env.Pods(ctx, pool, map[string]string{"app": "l4"})
		if err != nil {
			return false, "", err
		}
		for i := range pods {
			p := &pods[i]
			if p.Spec.NodeName == "" {
				continue
			}
			node := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node); err != nil {
				return false, "", client.IgnoreNotFound(err)
			}
			if it := node.Labels[corev1.LabelInstanceTypeStable]; !strings.HasPrefix(it, "g6.") {
				return false, "", fmt.Errorf("pod %s bound to %s, a %s without an L4", p.Name, p.Spec.NodeName, it)
			}
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != firstNode {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("claim pod still on %s", firstNode), nil
	})
	if err != nil {
		env.LogNodeClaimEvents(t, pool)
		t.Fatalf("consolidation of %s: %v\n%s", firstNode, err, env.Describe(pool, pool))
	}
	checkOnOwnDevices(t, runningPods(t, pool, "l4", 1, time.Minute), "g6.xlarge", "g6.2xlarge")
}
