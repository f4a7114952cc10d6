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

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestImpairedInstanceIsReplaced: an instance whose EC2 system status check fails is replaced once it has failed
// for 120 s (the controller polls once a minute, so within 3 minutes and a few seconds); the drain does not wait
// for a PodDisruptionBudget that allows no eviction, and the pod runs on the replacement.
func TestImpairedInstanceIsReplaced(t *testing.T) {
	ctx := context.Background()
	const pool = "impaired"
	setupPool(t, pool, framework.PoolOptions{ConsolidateAfter: "Never"})
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
	instanceID := claim.Status.ProviderID[strings.LastIndex(claim.Status.ProviderID, "/")+1:]
	impairedAt := time.Now()
	if err := env.SimAdmin(ctx, "POST", "instances/"+instanceID+"/status", map[string]string{"systemStatus": "impaired"}); err != nil {
		t.Fatal(err)
	}
	var deletedAfter time.Duration
	err := framework.Poll(ctx, 4*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return false, "", err
		}
		var names []string
		old, replaced := false, false
		for _, c := range claims {
			names = append(names, c.Name)
			if c.Name != claim.Name {
				replaced = replaced || c.Status.NodeName != ""
				continue
			}
			old = true
			if c.DeletionTimestamp != nil && deletedAfter == 0 {
				deletedAfter = c.DeletionTimestamp.Time.Sub(impairedAt)
				if deletedAfter < 119*time.Second {
					return false, "", fmt.Errorf("nodeclaim %s deleted %s after the impairment, before the 120 s threshold", c.Name, deletedAfter)
				}
			}
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
		return !old && replaced && running == 1, fmt.Sprintf("nodeclaims %v, old present %v, pods running elsewhere %d", names, old, running), nil
	})
	if err != nil {
		t.Fatalf("replacing impaired instance %s: %v\n%s", instanceID, err, env.LogTail("dovetail", 30))
	}
	t.Logf("instance %s impaired at %s: nodeclaim deleted after %s, replaced and pod running elsewhere after %s",
		instanceID, impairedAt.UTC().Format(time.RFC3339), deletedAfter.Round(time.Second), time.Since(impairedAt).Round(time.Second))
	events, err := env.Events(ctx, "default", "Node", node)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(events, "\n"), "InstanceUnhealthy: EC2 reports SystemStatus check reachability failing since") {
		t.Errorf("no InstanceUnhealthy event on node %s; events:\n%s", node, strings.Join(events, "\n"))
	}
}
