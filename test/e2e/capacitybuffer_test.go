//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/dovetail/dovetail/api/autoscaling/v1beta1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestCapacityBuffer: a buffer of 4 × (1 cpu, 2Gi) gets nodes with no pod on them,
// which consolidation (consolidateAfter 5s) keeps; a Deployment of 4 such pods then runs within seconds on those
// nodes, without waiting for a NodeClaim; and the buffer gets new room afterwards.
func TestCapacityBuffer(t *testing.T) {
	ctx := context.Background()
	const pool = "buffer"
	setupPool(t, pool, framework.PoolOptions{CapacityTypes: []string{"on-demand"}, ConsolidateAfter: "5s",
		Budgets: []map[string]any{{"nodes": "100%"}}})

	shape := framework.Deployment(pool, "web", pool, 4, "1", "2Gi")
	tpl := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: pool, Name: "web-shape"}, Template: shape.Spec.Template}
	cb := &autoscalingv1beta1.CapacityBuffer{
		ObjectMeta: metav1.ObjectMeta{Namespace: pool, Name: "spare"},
		Spec: autoscalingv1beta1.CapacityBufferSpec{
			PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "web-shape"},
			Replicas:       ptr.To[int32](4),
		},
	}
	for _, o := range []client.Object{tpl, cb} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()

	// The room: the buffer's NodeClaims initialized and the buffer saying its pods fit on existing capacity.
	room := map[string]bool{} // node names
	var claims []string
	err := framework.Poll(ctx, 60*time.Second, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		got := &autoscalingv1beta1.CapacityBuffer{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cb), got); err != nil {
			return false, "", err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, autoscalingv1beta1.ConditionProvisioning)
		ncs, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return false, "", err
		}
		ready := 0
		claims, room = claims[:0], map[string]bool{}
		for _, nc := range ncs {
			claims = append(claims, nc.Name)
			if nc.IsTrue(karpv1.ConditionTypeInitialized) && nc.Status.NodeName != "" {
				ready++
				room[nc.Status.NodeName] = true
			}
		}
		state := fmt.Sprintf("replicas %v, Provisioning %v, %d/%d nodeclaims initialized", got.Status.Replicas, cond, ready, len(ncs))
		ok := cond != nil && cond.Status == metav1.ConditionTrue && len(ncs) > 0 && ready == len(ncs)
		return ok, state, nil
	})
	if err != nil {
		t.Fatalf("buffer room: %v", err)
	}
	sort.Strings(claims)
	t.Logf("buffer room ready after %s: nodeclaims %v", time.Since(start).Round(100*time.Millisecond), claims)

	// Consolidation keeps the empty nodes that hold the room (consolidateAfter is 5s): sample for 8 s.
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		ncs, err := env.NodeClaims(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		for _, nc := range ncs {
			if nc.DeletionTimestamp != nil {
				t.Fatalf("nodeclaim %s holding buffer room is being deleted", nc.Name)
			}
		}
		if len(ncs) != len(claims) {
			t.Fatalf("nodeclaims changed while nothing happened: %d, was %d", len(ncs), len(claims))
		}
		time.Sleep(time.Second) // sampling interval of a check that nothing changes, not a wait for state
	}

	// The real pods take the room: all 4 Running on the buffer's nodes within seconds.
	deploy := framework.Deployment(pool, "web", pool, 4, "1", "2Gi")
	created := time.Now()
	if err := env.Client.Create(ctx, deploy); err != nil {
		t.Fatal(err)
	}
	err = framework.Poll(ctx, 15*time.Second, 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		pods, err := env.Pods(ctx, pool, map[string]string{"app": "web"})
		if err != nil {
			return false, "", err
		}
		running := 0
		var where []string
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
			where = append(where, p.Name+"@"+p.Spec.NodeName)
			if p.Spec.NodeName != "" && !room[p.Spec.NodeName] {
				return false, "", fmt.Errorf("pod %s went to node %s, not into the buffer's room %v", p.Name, p.Spec.NodeName, room)
			}
		}
		return running == 4, fmt.Sprintf("%d/4 running: %s", running, strings.Join(where, " ")), nil
	})
	if err != nil {
		t.Fatalf("deployment into the buffer's room: %v", err)
	}
	t.Logf("4 pods Running %s after the Deployment was created, on the buffer's nodes", time.Since(created).Round(100*time.Millisecond))

	// The buffer is provisioned again: new NodeClaims beside the old ones, initialized.
	err = framework.Poll(ctx, 60*time.Second, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		ncs, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return false, "", err
		}
		fresh := 0
		for _, nc := range ncs {
			if !contains(claims, nc.Name) && nc.IsTrue(karpv1.ConditionTypeInitialized) {
				fresh++
			}
		}
		return fresh > 0, fmt.Sprintf("%d nodeclaims, %d new and initialized", len(ncs), fresh), nil
	})
	if err != nil {
		t.Fatalf("new buffer room: %v", err)
	}
	t.Logf("new buffer room after %s", time.Since(created).Round(100*time.Millisecond))
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
