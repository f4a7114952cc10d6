//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// repairToleration is NODE_REPAIR_TOLERATIONS' KernelReady value in main_test.go. KernelReady is a condition of
// the EKS node monitoring agent; kwok does not write it, so a test sets it and it stays.
const repairToleration = 20 * time.Second

// setKernelReady marks the node unhealthy with the node-monitoring-agent condition KernelReady=False, merged
// into the node's conditions by type (kwok's heartbeats write the kubelet's conditions beside it).
func setKernelReady(ctx context.Context, t *testing.T, node string) time.Time {
	t.Helper()
	n := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	orig := n.DeepCopy()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: "KernelReady", Status: corev1.ConditionFalse,
		Reason: "KernelBug", Message: "set by the e2e test", LastHeartbeatTime: now, LastTransitionTime: now})
	if err := env.Client.Status().Patch(ctx, n, client.StrategicMergeFrom(orig)); err != nil {
		t.Fatalf("setting KernelReady=False on %s: %v", node, err)
	}
	return now.Time
}

// TestNodeRepairReplacesUnhealthyNode (NodeRepair): a node whose KernelReady has been False for the toleration
// is replaced, not before the toleration has passed; the drain waits for a PodDisruptionBudget that allows no
// eviction only until the NodePool's terminationGracePeriod (20 s, shorter than the policy's 10 minutes) ends.
func TestNodeRepairReplacesUnhealthyNode(t *testing.T) {
	ctx := context.Background()
	const pool = "repair"
	setupPool(t, pool, framework.PoolOptions{ConsolidateAfter: "Never", TerminationGracePeriod: "20s"})
	labels := map[string]string{"app": "app"}
	if err := env.Client.Create(ctx, framework.Deployment(pool, "app", pool, 1, "1", "1Gi")); err != nil {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: pool, Name: "app"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &intstr.IntOrString{Type: intstr.Int, IntVal: 1},
			Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}
	if err := env.Client.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, labels, 1, 2*time.Minute)
	claim := onlyNodeClaim(t, pool)
	node := claim.Status.NodeName
	since := setKernelReady(ctx, t, node)

	// The old NodeClaim goes and a new one with a new node runs the pod.
	err := framework.Poll(ctx, 150*time.Second, time.Second, func(ctx context.Context) (bool, string, error) {
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return false, "", err
		}
		var names []string
		replaced := false
		for _, c := range claims {
			names = append(names, c.Name)
			if c.Name == claim.Name {
				if c.DeletionTimestamp != nil && c.DeletionTimestamp.Time.Before(since.Add(repairToleration-time.Second)) {
					return false, "", fmt.Errorf("nodeclaim %s deleted at %s, before the end of the %s toleration from %s",
						c.Name, c.DeletionTimestamp.Time, repairToleration, since)
				}
				continue
			}
			replaced = replaced || c.Status.NodeName != ""
		}
		pods, err := env.Pods(ctx, pool, labels)
		if err != nil {
			return false, "", err
		}
		running := 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != node && p.DeletionTimestamp == nil {
				running++
			}
		}
		gone := true
		for _, c := range claims {
			gone = gone && c.Name != claim.Name
		}
		return gone && replaced && running == 1, fmt.Sprintf("nodeclaims %v, old gone %v, pods running elsewhere %d", names, gone, running), nil
	})
	if err != nil {
		t.Fatalf("repair of %s: %v\n%s", node, err, env.LogTail("dovetail", 30))
	}
	events, err := env.Events(ctx, "default", "Node", node)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(events, "\n"), "Unhealthy: unhealthy (KernelReady=False") {
		t.Errorf("no DisruptionTerminating event for the repair on node %s; events:\n%s", node, strings.Join(events, "\n"))
	}
}

// TestNodeRepairHoldsBack (NodeRepair): with 3 of a NodePool's 5 nodes unhealthy (over the 20% limit), no node is
// repaired, and each unhealthy node gets a NodeRepairBlocked event saying why.
func TestNodeRepairHoldsBack(t *testing.T) {
	ctx := context.Background()
	const pool = "repair-limit"
	// One pod per node: m5.large has 2 cpu, each pod asks for 1500m.
	setupPool(t, pool, framework.PoolOptions{ConsolidateAfter: "Never", InstanceTypes: []string{"m5.large"}})
	labels := map[string]string{"app": "app"}
	if err := env.Client.Create(ctx, framework.Deployment(pool, "app", pool, 5, "1500m", "1Gi")); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, labels, 5, 2*time.Minute)
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) != 5 {
		t.Fatalf("%d nodeclaims, want 5", len(claims))
	}
	var sick []string
	for _, c := range claims[:3] {
		setKernelReady(ctx, t, c.Status.NodeName)
		sick = append(sick, c.Status.NodeName)
	}
	// Past the toleration, every sick node says why it is not repaired; none is.
	noneDeleted := func(ctx context.Context) error {
		cs, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return err
		}
		for _, c := range cs {
			if c.DeletionTimestamp != nil {
				return fmt.Errorf("nodeclaim %s deleted while 3 of 5 nodes are unhealthy", c.Name)
			}
		}
		if len(cs) != 5 {
			return fmt.Errorf("%d nodeclaims, want 5", len(cs))
		}
		return nil
	}
	want := "NodeRepairBlocked: 3 of 5 nodes in NodePool repair-limit are unhealthy, more than the 20% limit (1)"
	err = framework.Poll(ctx, repairToleration+40*time.Second, time.Second, func(ctx context.Context) (bool, string, error) {
		if err := noneDeleted(ctx); err != nil {
			return false, "", err
		}
		blocked := 0
		for _, n := range sick {
			events, err := env.Events(ctx, "default", "Node", n)
			if err != nil {
				return false, "", err
			}
			for _, e := range events {
				if e == want {
					blocked++
					break
				}
			}
		}
		return blocked == 3, fmt.Sprintf("%d of 3 unhealthy nodes with the NodeRepairBlocked event", blocked), nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, env.LogTail("dovetail", 30))
	}
	if err := framework.Consistently(ctx, 10*time.Second, time.Second, noneDeleted); err != nil {
		t.Fatal(err)
	}
}
