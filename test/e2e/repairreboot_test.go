//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// setGPUFault reports AcceleratedHardwareReady=False with an NVIDIA XID 46 (a fault a reboot clears) on the node,
// as the EKS node monitoring agent would.
func setGPUFault(ctx context.Context, t *testing.T, node string) {
	t.Helper()
	n := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	orig := n.DeepCopy()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	c := corev1.NodeCondition{Type: "AcceleratedHardwareReady", Status: corev1.ConditionFalse, Reason: "NvidiaXID46Error",
		Message: "set by the e2e test", LastHeartbeatTime: now, LastTransitionTime: now}
	replaced := false
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == c.Type {
			n.Status.Conditions[i], replaced = c, true
		}
	}
	if !replaced {
		n.Status.Conditions = append(n.Status.Conditions, c)
	}
	if err := env.Client.Status().Patch(ctx, n, client.StrategicMergeFrom(orig)); err != nil {
		t.Fatalf("setting AcceleratedHardwareReady=False on %s: %v", node, err)
	}
}

// rebootCalls counts the simulator's RebootInstances calls that named the instance.
func rebootCalls(ctx context.Context, t *testing.T, instanceID string) int {
	t.Helper()
	log, err := env.CallLog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range log.Records {
		if r.Action != "RebootInstances" {
			continue
		}
		for _, res := range r.Resources {
			if strings.HasSuffix(res.ARN, "/"+instanceID) {
				n++
			}
		}
	}
	return n
}

// gpuPool starts a NodePool with one node running one pod and returns its NodeClaim.
func gpuPool(t *testing.T, pool string) karpv1.NodeClaim {
	t.Helper()
	setupPool(t, pool, framework.PoolOptions{ConsolidateAfter: "Never", InstanceTypes: []string{"m5.large"}})
	if err := env.Client.Create(context.Background(), framework.Deployment(pool, "app", pool, 1, "1", "1Gi")); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "app"}, 1, 2*time.Minute)
	return onlyNodeClaim(t, pool)
}

func rebooting(nc *karpv1.NodeClaim) string {
	if c := nc.GetCondition(karpv1.ConditionTypeRebooting); c != nil {
		return string(c.Status) + "/" + c.Reason
	}
	return "none"
}

// TestNodeRepairReboot (NodeRepair, AWS gate RebootForRepair): a node reporting a GPU fault a reboot clears is
// drained and rebooted in place after its toleration (20 s here), and comes back: same NodeClaim, same instance, one
// RebootInstances call, a new boot ID. Its pod was evicted before the call (Karpenter v1.15 drains first) and runs
// on a node the provisioner launched for it; the reboot counts as a disruption of reason unhealthy.
func TestNodeRepairReboot(t *testing.T) {
	ctx := context.Background()
	const pool = "repair-reboot"
	claim := gpuPool(t, pool)
	id := framework.InstanceID(claim.Status.ProviderID)
	node := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: claim.Status.NodeName}, node); err != nil {
		t.Fatal(err)
	}
	bootID := node.Status.NodeInfo.BootID
	before, err := env.Pods(ctx, pool, map[string]string{"app": "app"})
	if err != nil || len(before) != 1 {
		t.Fatalf("pods before the fault: %d (%v), want 1", len(before), err)
	}
	setGPUFault(ctx, t, claim.Status.NodeName)

	err = framework.Poll(ctx, 90*time.Second, time.Second, func(ctx context.Context) (bool, string, error) {
		nc := &karpv1.NodeClaim{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: claim.Name}, nc); err != nil {
			return false, "", err
		}
		return rebooting(nc) == "False/RebootSucceeded", "Rebooting " + rebooting(nc), nil
	})
	if err != nil {
		t.Fatalf("waiting for the reboot: %v\n%s", err, env.Describe(pool, pool))
	}
	after := &karpv1.NodeClaim{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: claim.Name}, after); err != nil {
		t.Fatal(err)
	}
	if after.UID != claim.UID || after.Status.ProviderID != claim.Status.ProviderID || !after.DeletionTimestamp.IsZero() {
		t.Errorf("after the reboot: nodeclaim %s (%s, deleting %v), want the same one in service (%s)", after.Name,
			after.Status.ProviderID, !after.DeletionTimestamp.IsZero(), claim.Status.ProviderID)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: claim.Status.NodeName}, node); err != nil {
		t.Fatal(err)
	}
	if node.Status.NodeInfo.BootID == bootID {
		t.Errorf("the node's boot ID is still %q", bootID)
	}
	for _, tn := range node.Spec.Taints {
		if tn.Key == karpv1.RebootingTaintKey {
			t.Errorf("the node still carries %s", tn.Key)
		}
	}
	if n := rebootCalls(ctx, t, id); n != 1 {
		t.Errorf("%d RebootInstances calls for %s, want 1", n, id)
	}
	if st, err := env.InstanceStates(ctx, id); err != nil || st[id] != "running" {
		t.Errorf("instance %s: %v %v, want running", id, st, err)
	}
	waitRunning(t, pool, map[string]string{"app": "app"}, 1, time.Minute)
	pods, err := env.Pods(ctx, pool, map[string]string{"app": "app"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.Name == before[0].Name {
			t.Errorf("pod %s was not drained before the reboot", p.Name)
		}
	}
	if v, err := env.MetricSum(ctx, "karpenter_nodes_reboots_total", map[string]string{"result": "succeeded"}); err != nil || v < 1 {
		t.Errorf("karpenter_nodes_reboots_total{result=succeeded} = %v (%v), want at least 1", v, err)
	}
	if v, err := env.MetricSum(ctx, "karpenter_nodeclaims_disrupted_total", map[string]string{"reason": "unhealthy", "nodepool": pool}); err != nil || v < 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=unhealthy,nodepool=%s} = %v (%v), want at least 1", pool, v, err)
	}
	if v, err := env.MetricSum(ctx, "karpenter_pods_drained_total", map[string]string{"reason": "unhealthy"}); err != nil || v < 1 {
		t.Errorf("karpenter_pods_drained_total{reason=unhealthy} = %v (%v), want at least 1", v, err)
	}
}

// TestNodeRepairRebootNotBack (RebootForRepair, the simulator's reboot-hang fault): a node whose reboot does not
// bring it back within the observation window (30 s here) is replaced: its NodeClaim deleted. Its pod, drained before
// the reboot, runs on a new node.
func TestNodeRepairRebootNotBack(t *testing.T) {
	ctx := context.Background()
	const pool = "repair-reboot-hang"
	claim := gpuPool(t, pool)
	if err := simAdmin(ctx, "POST", "faults/reboot-hang", map[string]any{"nodePool": pool, "count": 1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := simAdmin(context.Background(), "DELETE", "faults/reboot-hang", nil); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	setGPUFault(ctx, t, claim.Status.NodeName)
	err := framework.Poll(ctx, 2*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return false, "", err
		}
		var states []string
		replaced, gone := false, true
		for _, c := range claims {
			states = append(states, fmt.Sprintf("%s %s deleting=%v", c.Name, rebooting(&c), !c.DeletionTimestamp.IsZero()))
			if c.UID != claim.UID && c.IsTrue(karpv1.ConditionTypeInitialized) {
				replaced = true
			}
			if c.UID == claim.UID && c.DeletionTimestamp.IsZero() {
				gone = false
			}
		}
		return replaced && gone, strings.Join(states, "; "), nil
	})
	if err != nil {
		t.Fatalf("waiting for the replacement: %v\n%s", err, env.Describe(pool, pool))
	}
	if n := rebootCalls(ctx, t, framework.InstanceID(claim.Status.ProviderID)); n != 1 {
		t.Errorf("%d RebootInstances calls, want 1", n)
	}
	events, err := env.Events(ctx, "default", "NodeClaim", claim.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(events, "\n"), "RebootFailed") {
		t.Errorf("no RebootFailed event on %s: %v", claim.Name, events)
	}
	waitRunning(t, pool, map[string]string{"app": "app"}, 1, time.Minute)
}
