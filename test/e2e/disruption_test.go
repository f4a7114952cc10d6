//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestPDBNeverViolatedWhileDraining (scenario 3): 10 replicas under a PodDisruptionBudget with minAvailable 9,
// spread two to a node over 5 nodes; all 5 NodeClaims are deleted at once. Draining must never leave fewer than
// 9 replicas available, and the workload ends up Running on replacement nodes.
func TestPDBNeverViolatedWhileDraining(t *testing.T) {
	ctx := context.Background()
	const pool = "pdb"
	// m5.large has 2 vCPUs: with 700m per pod, at most two replicas fit a node.
	setupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"m5.large"}, CapacityTypes: []string{"on-demand"}})
	labels := map[string]string{"app": "web"}
	if err := env.Client.Create(ctx, framework.Deployment(pool, "web", pool, 10, "700m", "512Mi")); err != nil {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: pool, Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &intstr.IntOrString{Type: intstr.Int, IntVal: 9},
			Selector:     &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	if err := env.Client.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, labels, 10, 3*time.Minute)
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(claims) < 5 {
		t.Fatalf("expected at least 5 nodeclaims for 10 replicas of 700m on m5.large, got %d", len(claims))
	}
	// Wait until the disruption controller has counted the budget, or every eviction would be refused anyway.
	if err := framework.Poll(ctx, time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		got := &policyv1.PodDisruptionBudget{}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(pdb), got)
		return err == nil && got.Status.CurrentHealthy >= 10, fmt.Sprintf("pdb healthy %d", got.Status.CurrentHealthy), err
	}); err != nil {
		t.Fatal(err)
	}

	// Watch availability from a goroutine while the nodes drain.
	watchCtx, stopWatch := context.WithCancel(ctx)
	var mu sync.Mutex
	minAvailable, samples := 10, 0
	var watchErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(100 * time.Millisecond)
		defer ticker.Stop()
		for {
			pods, err := env.Pods(watchCtx, pool, labels)
			if err != nil && watchCtx.Err() == nil {
				mu.Lock()
				watchErr = err
				mu.Unlock()
			}
			if err == nil {
				n := 0
				for i := range pods {
					if framework.PodAvailable(&pods[i]) {
						n++
					}
				}
				mu.Lock()
				samples++
				if n < minAvailable {
					minAvailable = n
				}
				mu.Unlock()
			}
			select {
			case <-watchCtx.Done():
				return
			case <-ticker.C:
			}
		}
	}()

	old := map[string]bool{}
	for i := range claims {
		old[claims[i].Name] = true
		if err := env.Client.Delete(ctx, &claims[i]); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	err = framework.Poll(ctx, 6*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		current, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return false, "", err
		}
		left := 0
		for _, c := range current {
			if old[c.Name] {
				left++
			}
		}
		p, err := framework.GetProgress(ctx, env.Client, pool, client.MatchingLabels(labels))
		if err != nil {
			return false, "", err
		}
		return left == 0 && p.PodsRunning == 10, fmt.Sprintf("%d old nodeclaims left; %s", left, p), nil
	})
	stopWatch()
	<-done
	if err != nil {
		t.Fatalf("draining 5 nodes under the PDB: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if watchErr != nil {
		t.Fatalf("watching availability: %v", watchErr)
	}
	if minAvailable < 9 {
		t.Errorf("availability dropped to %d replicas (PDB minAvailable 9)", minAvailable)
	}
	t.Logf("minimum availability %d over %d samples", minAvailable, samples)
}

// TestUninitializedTaintRace (scenario 4): 200 nodes whose node.cloudprovider.kubernetes.io/uninitialized taint the
// simulated cloud controller manager removes at random times, before and after Dovetail's own sync. Every NodeClaim
// must become Initialized and no node may keep, or get back, the taint.
func TestUninitializedTaintRace(t *testing.T) {
	ctx := context.Background()
	const pool = "race"
	const nodes = 200
	setupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"m5.large"}, CapacityTypes: []string{"on-demand"}})
	// 1500m of an m5.large's ~1.93 allocatable cores: one pod a node.
	labels := map[string]string{"app": "race"}
	if err := env.Client.Create(ctx, framework.Deployment(pool, "race", pool, nodes, "1500m", "512Mi")); err != nil {
		t.Fatal(err)
	}
	const taint = "node.cloudprovider.kubernetes.io/uninitialized"
	// The nodes seen initialized and untainted; a node launched later starts with the taint, as it should.
	seen := map[string]bool{}
	// The NodeClaims of this pool created since the test began: a rerun's pool of the same name may still be
	// going away.
	began := time.Now().Add(-time.Second)
	launched := map[string]bool{}
	note := func(claims []karpv1.NodeClaim) {
		for i := range claims {
			if claims[i].CreationTimestamp.Time.After(began) {
				launched[claims[i].Name] = true
			}
		}
	}
	err := framework.Poll(ctx, 5*time.Minute, 2*time.Second, func(ctx context.Context) (bool, string, error) {
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return false, "", err
		}
		note(claims)
		initialized := 0
		for i := range claims {
			if conditionTrue(claims[i].Status.Conditions, "Initialized") {
				initialized++
			}
		}
		list, err := env.Nodes(ctx, pool)
		if err != nil {
			return false, "", err
		}
		tainted := 0
		for i := range list {
			for _, tn := range list[i].Spec.Taints {
				if tn.Key == taint {
					tainted++
				}
			}
		}
		status := fmt.Sprintf("%d/%d nodeclaims initialized, %d nodes, %d still tainted", initialized, len(claims), len(list), tainted)
		done := initialized >= nodes && len(list) >= nodes && tainted == 0
		if done {
			for i := range list {
				seen[list[i].Name] = true
			}
		}
		return done, status, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// And nobody adds it back to those nodes.
	err = framework.Consistently(ctx, 5*time.Second, time.Second, func(ctx context.Context) error {
		list, err := env.Nodes(ctx, pool)
		if err != nil {
			return err
		}
		for i := range list {
			if !seen[list[i].Name] {
				continue
			}
			for _, tn := range list[i].Spec.Taints {
				if tn.Key == taint {
					return fmt.Errorf("node %s has the %s taint again", list[i].Name, taint)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, labels, nodes, 2*time.Minute)
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	note(claims)
	t.Logf("%d NodeClaims seen for %d one-per-node pods", len(launched), nodes)
}

func conditionTrue(conds []metav1.Condition, t string) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// TestOutOfBandChanges (scenario 6, part): an instance terminated outside Dovetail has its NodeClaim and Node
// cleaned up; a Node deleted by a user has its instance terminated.
func TestOutOfBandChanges(t *testing.T) {
	ctx := context.Background()
	const pool = "oob"
	setupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"m5.large"}, CapacityTypes: []string{"on-demand"}})
	if err := env.Client.Create(ctx, framework.Deployment(pool, "app", pool, 2, "1500m", "512Mi")); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "app"}, 2, 2*time.Minute)
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil || len(claims) < 2 {
		t.Fatalf("want 2 nodeclaims, got %d (%v)", len(claims), err)
	}

	t.Run("instance terminated outside Dovetail", func(t *testing.T) {
		claim := claims[0]
		if err := env.TerminateOutOfBand(ctx, framework.InstanceID(claim.Status.ProviderID)); err != nil {
			t.Fatal(err)
		}
		err := framework.Poll(ctx, 90*time.Second, time.Second, func(ctx context.Context) (bool, string, error) {
			nc := &corev1.Node{}
			nodeErr := env.Client.Get(ctx, client.ObjectKey{Name: claim.Status.NodeName}, nc)
			claimErr := env.Client.Get(ctx, client.ObjectKeyFromObject(&claim), &claim)
			return apierrors.IsNotFound(nodeErr) && apierrors.IsNotFound(claimErr),
				fmt.Sprintf("node: %v, nodeclaim: %v", nodeErr, claimErr), nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("node deleted by a user", func(t *testing.T) {
		claim := claims[1]
		instance := framework.InstanceID(claim.Status.ProviderID)
		if err := env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: claim.Status.NodeName}}); err != nil {
			t.Fatal(err)
		}
		err := framework.Poll(ctx, 90*time.Second, time.Second, func(ctx context.Context) (bool, string, error) {
			states, err := env.InstanceStates(ctx, instance)
			s := states[instance]
			return s == "shutting-down" || s == "terminated" || (err == nil && s == ""), "instance " + s, err
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
