//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestMixedScaleOutFollowsThePlan (issue 16): hostname-spread small pods and large pods scale out together. Every
// pod must run and no planned node may stay empty (a NodeClaim whose pods the kube-scheduler put elsewhere is
// deleted as surplus); large nodes left holding only a small pod are counted and logged. Disruption budgets are
// closed so that consolidation cannot tidy up after the provisioner.
func TestMixedScaleOutFollowsThePlan(t *testing.T) {
	ctx := context.Background()
	const pool = "mixedfit"
	const replicas = 6
	// As in the 2,000-pod run: a small pod fits a small type alone (the hostname spread keeps them apart)
	// and fits the large type only while it is empty.
	setupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"m5.large", "r5.xlarge"}, Categories: []string{"m", "r"},
		CapacityTypes: []string{"on-demand"}, Budgets: []map[string]any{{"nodes": "0"}}})

	small := framework.Deployment(pool, "small", pool, replicas, "900m", "3Gi")
	small.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew:           1,
		TopologyKey:       corev1.LabelHostname,
		WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "small"}},
	}}
	large := framework.Deployment(pool, "large", pool, replicas, "3500m", "28Gi")
	fleetsBefore := createFleetCalls(t)
	start := time.Now()
	for _, d := range []client.Object{small, large} {
		if err := env.Client.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	waitRunning(t, pool, map[string]string{"app": "small"}, replicas, 3*time.Minute)
	waitRunning(t, pool, map[string]string{"app": "large"}, replicas, 2*time.Minute)
	t.Logf("all %d pods Running %.0fs after apply", 2*replicas, time.Since(start).Seconds())

	largeMemory := resource.MustParse("28Gi")
	var empty, displaced []string
	err := framework.Poll(ctx, 90*time.Second, 2*time.Second, func(ctx context.Context) (bool, string, error) {
		claims, err := env.NodeClaims(ctx, pool)
		if err != nil {
			return false, "", err
		}
		nodes, err := env.Nodes(ctx, pool)
		if err != nil {
			return false, "", err
		}
		pods, err := env.Pods(ctx, pool, nil)
		if err != nil {
			return false, "", err
		}
		onNode := map[string][]string{}
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				onNode[p.Spec.NodeName] = append(onNode[p.Spec.NodeName], p.Labels["app"])
			}
		}
		empty, displaced = nil, nil
		for _, nc := range claims {
			if nc.Status.NodeName == "" || len(onNode[nc.Status.NodeName]) == 0 {
				empty = append(empty, fmt.Sprintf("nodeclaim %s (node %q) holds no pod", nc.Name, nc.Status.NodeName))
			}
		}
		for _, n := range nodes {
			apps := onNode[n.Name]
			onlySmall := len(apps) > 0
			for _, a := range apps {
				onlySmall = onlySmall && a == "small"
			}
			if mem := n.Status.Allocatable[corev1.ResourceMemory]; onlySmall && mem.Cmp(largeMemory) >= 0 {
				displaced = append(displaced, fmt.Sprintf("node %s (%s) holds only small pods %v though a large pod fits it",
					n.Name, n.Labels[corev1.LabelInstanceTypeStable], apps))
			}
		}
		sort.Strings(empty)
		return len(empty) == 0, fmt.Sprintf("%d nodeclaims, %d nodes: %s", len(claims), len(nodes), strings.Join(empty, "; ")), nil
	})
	if err != nil {
		t.Fatalf("a planned node stayed empty: %v\n%s", err, strings.Join(empty, "\n"))
	}
	// Where the kube-scheduler put a small pod on a large node despite the large pod's nomination, the large pod
	// got a node of its own and the small pod's planned node was deleted as surplus: all pods run and no planned
	// node is empty, at the cost of a large node holding a small pod. Reported, not failed: the local 1.34
	// scheduler does not always keep the nominated pod's room (docs/provisioning.md).
	if len(displaced) > 0 {
		t.Logf("%d large nodes hold only a small pod:\n%s", len(displaced), strings.Join(displaced, "\n"))
	}
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d pods on %d nodes; %d CreateFleet calls", 2*replicas, len(claims), createFleetCalls(t)-fleetsBefore)
}

// createFleetCalls reads how many CreateFleet calls the simulator has answered.
func createFleetCalls(t *testing.T) int {
	t.Helper()
	resp, err := http.Get(env.AWSEndpoint + "/_awssim/state")
	if err != nil {
		t.Fatalf("reading simulator state: %v", err)
	}
	defer resp.Body.Close()
	var st struct {
		Calls map[string]int `json:"calls"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("decoding simulator state: %v", err)
	}
	return st.Calls["CreateFleet"]
}
