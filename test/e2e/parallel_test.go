//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// commandAnnotation is the disruption controller's record on a candidate NodeClaim.
const commandAnnotation = "dovetail.sh/disruption-command"

// scaleDeployment sets a Deployment's replicas.
func scaleDeployment(t *testing.T, namespace, name string, replicas int32) {
	t.Helper()
	ctx := context.Background()
	d := &appsv1.Deployment{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To(replicas)
	if err := env.Client.Patch(ctx, d, patch); err != nil {
		t.Fatal(err)
	}
}

// commandIDs adds the ids of the disruption commands the NodeClaims carry (records stay on candidates being
// deleted) to ids.
func commandIDs(claims []karpv1.NodeClaim, ids map[string]bool) {
	for i := range claims {
		var r struct {
			ID string `json:"id"`
		}
		if raw := claims[i].Annotations[commandAnnotation]; raw != "" && json.Unmarshal([]byte(raw), &r) == nil && r.ID != "" {
			ids[r.ID] = true
		}
	}
}

// disrupting counts a pool's NodeClaims a disruption holds: carrying a command record or being deleted.
func disrupting(claims []karpv1.NodeClaim) int {
	n := 0
	for i := range claims {
		if claims[i].DeletionTimestamp != nil || claims[i].Annotations[commandAnnotation] != "" {
			n++
		}
	}
	return n
}

// TestParallelDisruptionAcrossNodePools: two NodePools with a budget of one node each scale in at the same
// time. Both disrupt at once (each pool has a node held by a disruption while the other does), never more than
// their budget, and both shrink to what their pods need. Then both drift: two replace commands, one per pool,
// are in flight at once.
func TestParallelDisruptionAcrossNodePools(t *testing.T) {
	ctx := context.Background()
	pools := []string{"par-a", "par-b"}
	for _, pool := range pools {
		// m5.large has 2 vCPUs: with 1500m a pod, each pod gets a node of its own.
		setupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"m5.large"}, CapacityTypes: []string{"on-demand"},
			ConsolidateAfter: "1s", Budgets: []map[string]any{{"nodes": "1"}}})
		if err := env.Client.Create(ctx, framework.Deployment(pool, "web", pool, 4, "1500m", "512Mi")); err != nil {
			t.Fatal(err)
		}
	}
	for _, pool := range pools {
		waitRunning(t, pool, map[string]string{"app": "web"}, 4, 3*time.Minute)
	}
	for _, pool := range pools {
		scaleDeployment(t, pool, "web", 1)
	}
	start := time.Now()
	both, overBudget, most := false, "", 0
	err := framework.Poll(ctx, 2*time.Minute, 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		var counts, held []int
		done := true
		ids := map[string]bool{}
		for _, pool := range pools {
			claims, err := env.NodeClaims(ctx, pool)
			if err != nil {
				return false, "", err
			}
			commandIDs(claims, ids)
			h := disrupting(claims)
			counts, held = append(counts, len(claims)), append(held, h)
			// A node being deleted counts against the budget until it is gone.
			if h > 1 && overBudget == "" {
				overBudget = fmt.Sprintf("nodepool %s has %d nodes disrupting with a budget of 1", pool, h)
			}
			done = done && len(claims) == 1 && h == 0
		}
		if held[0] > 0 && held[1] > 0 && !both {
			both = true
			t.Logf("both nodepools disrupting at once %.1fs after the scale-in", time.Since(start).Seconds())
		}
		if len(ids) > most {
			most = len(ids)
			t.Logf("%d disruption commands in flight at once %.1fs after the scale-in", most, time.Since(start).Seconds())
		}
		return done && both, fmt.Sprintf("nodeclaims %v, disrupting %v, seen both at once %v, most commands at once %d", counts, held, both, most), nil
	})
	if err != nil {
		t.Fatalf("%v\ncontroller log:\n%s", err, env.LogTail("dovetail", 40))
	}
	if overBudget != "" {
		t.Error(overBudget)
	}
	t.Logf("both nodepools down to one node %.1fs after the scale-in", time.Since(start).Seconds())

	// Emptiness deletes the empty nodes of both pools in one command. Drift replaces one node per command: with
	// both pools drifting, each pool's budget lets one replace command run, and both run at once.
	for _, pool := range pools {
		np := &karpv1.NodePool{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(np.DeepCopy())
		if np.Spec.Template.Annotations == nil {
			np.Spec.Template.Annotations = map[string]string{}
		}
		np.Spec.Template.Annotations["dovetail.test/revision"] = "2"
		if err := env.Client.Patch(ctx, np, patch); err != nil {
			t.Fatal(err)
		}
	}
	start = time.Now()
	old := map[string]bool{}
	for _, pool := range pools {
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		for i := range claims {
			old[claims[i].Name] = true
		}
	}
	most = 0
	err = framework.Poll(ctx, 2*time.Minute, 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		ids := map[string]bool{}
		left := 0
		for _, pool := range pools {
			claims, err := env.NodeClaims(ctx, pool)
			if err != nil {
				return false, "", err
			}
			commandIDs(claims, ids)
			for i := range claims {
				if old[claims[i].Name] {
					left++
				}
			}
		}
		if len(ids) > most {
			most = len(ids)
			t.Logf("%d disruption commands in flight at once %.1fs after the template change", most, time.Since(start).Seconds())
		}
		return left == 0 && most >= 2, fmt.Sprintf("%d drifted nodeclaims left, most commands in flight at once %d", left, most), nil
	})
	if err != nil {
		t.Fatalf("%v\ncontroller log:\n%s", err, env.LogTail("dovetail", 40))
	}
	t.Logf("both drifted nodes replaced %.1fs after the template change", time.Since(start).Seconds())
	// The replacements registered held for their commands' pods; the holds went when the commands drained.
	err = framework.Poll(ctx, 30*time.Second, 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		var holding []string
		for _, pool := range pools {
			nodes, err := env.Nodes(ctx, pool)
			if err != nil {
				return false, "", err
			}
			for i := range nodes {
				for _, tn := range nodes[i].Spec.Taints {
					if tn.Key == "dovetail.sh/replacement-held" {
						holding = append(holding, nodes[i].Name)
					}
				}
			}
		}
		return len(holding) == 0, fmt.Sprintf("nodes still held: %v", holding), nil
	})
	if err != nil {
		t.Fatalf("%v\ncontroller log:\n%s", err, env.LogTail("dovetail", 40))
	}
}

// TestScaleInConverges: 20 nodes (two 700m pods a node) scale in to 9 pods and a do-not-disrupt pod. The
// NodePool converges to at most 6 nodes; the PodDisruptionBudget (maxUnavailable 1) is never violated and the
// do-not-disrupt pod is never evicted.
func TestScaleInConverges(t *testing.T) {
	ctx := context.Background()
	const pool = "scalein"
	setupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"m5.large"}, CapacityTypes: []string{"on-demand"},
		ConsolidateAfter: "1s", Budgets: []map[string]any{{"nodes": "50%"}}})
	labels := map[string]string{"app": "web"}
	if err := env.Client.Create(ctx, framework.Deployment(pool, "web", pool, 39, "700m", "256Mi")); err != nil {
		t.Fatal(err)
	}
	precious := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: pool, Name: "precious", Labels: map[string]string{"app": "precious"},
			Annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: karpv1.DoNotDisruptValue}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			NodeSelector:                  map[string]string{karpv1.NodePoolLabelKey: pool},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("700m")}}}},
		},
	}
	if err := env.Client.Create(ctx, precious); err != nil {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: pool, Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &intstr.IntOrString{Type: intstr.Int, IntVal: 1},
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	if err := env.Client.Create(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, labels, 39, 4*time.Minute)
	waitRunning(t, pool, map[string]string{"app": "precious"}, 1, time.Minute)
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d nodeclaims for 40 pods", len(claims))
	p := &corev1.Pod{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(precious), p); err != nil {
		t.Fatal(err)
	}
	preciousUID, preciousNode := p.UID, p.Spec.NodeName

	scaleDeployment(t, pool, "web", 9)
	start := time.Now()
	// Watch availability (desired 9, maxUnavailable 1) and the do-not-disrupt pod while the pool shrinks.
	watchCtx, stopWatch := context.WithCancel(ctx)
	var mu sync.Mutex
	minAvailable, violation := 9, ""
	done := make(chan struct{})
	go func() {
		defer close(done)
		settled := false
		for watchCtx.Err() == nil {
			pods, err := env.Pods(watchCtx, pool, labels)
			if err == nil {
				available, live := 0, 0
				for i := range pods {
					if pods[i].DeletionTimestamp == nil {
						live++
					}
					if framework.PodAvailable(&pods[i]) {
						available++
					}
				}
				mu.Lock()
				// Count from when the scale-in itself settled (9 pods left), then every sample.
				if !settled && live == 9 && available == 9 {
					settled = true
				}
				if settled && available < minAvailable {
					minAvailable = available
				}
				mu.Unlock()
			}
			p := &corev1.Pod{}
			err = env.Client.Get(watchCtx, client.ObjectKeyFromObject(precious), p)
			mu.Lock()
			switch {
			case err != nil && watchCtx.Err() == nil && violation == "":
				violation = fmt.Sprintf("do-not-disrupt pod: %v", err)
			case err == nil && (p.UID != types.UID(preciousUID) || p.DeletionTimestamp != nil || p.Spec.NodeName != preciousNode) && violation == "":
				violation = fmt.Sprintf("do-not-disrupt pod evicted or moved (node %q, deleting %v)", p.Spec.NodeName, p.DeletionTimestamp != nil)
			}
			mu.Unlock()
			select {
			case <-watchCtx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	stable := 0
	err = framework.Poll(ctx, 3*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return false, "", err
		}
		prog, err := framework.GetProgress(ctx, env.Client, pool, client.MatchingLabels(labels))
		if err != nil {
			return false, "", err
		}
		h := disrupting(claims)
		if len(claims) <= 6 && h == 0 && prog.PodsRunning == 9 {
			stable++
		} else {
			stable = 0
		}
		return stable >= 5, fmt.Sprintf("%d nodeclaims, %d disrupting; %s", len(claims), h, prog), nil
	})
	stopWatch()
	<-done
	if err != nil {
		t.Fatalf("scale-in did not converge: %v\ncontroller log:\n%s", err, env.LogTail("dovetail", 40))
	}
	t.Logf("converged %.1fs after the scale-in", time.Since(start).Seconds())
	mu.Lock()
	defer mu.Unlock()
	if violation != "" {
		t.Error(violation)
	}
	if minAvailable < 8 {
		t.Errorf("availability dropped to %d of 9 replicas (PDB maxUnavailable 1)", minAvailable)
	}
}
