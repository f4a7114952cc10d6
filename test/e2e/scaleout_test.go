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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestMixedScaleOutFollowsThePlan (issue 16): hostname-spread small pods and large pods scale out together, the
// shape that made the kube-scheduler put small pods on the large nodes launched for large pods. Each pod needs a
// node of its own (two small pods may not share a node, a large pod leaves no room for a small one), so the
// cheapest outcome is one m5.large per small pod and one r5.xlarge per large pod. The test fails when the run ends
// with a planned node empty (a NodeClaim with no pod), or with a node holding pods that a cheaper type of the pool
// would hold (a small pod alone on an r5.xlarge: its planned node was left empty and its large pod got a launch
// of its own), or with more nodes than pods. The plan (each pod's last Nominated event) is compared with where the
// pods were bound and the differences logged. Disruption budgets are closed so that consolidation cannot tidy up
// after the provisioner.
func TestMixedScaleOutFollowsThePlan(t *testing.T) {
	ctx := context.Background()
	const pool = "mixedfit"
	keepLogs(t)
	const replicas = 20
	// A small pod fits an m5.large alone (the hostname spread keeps them apart) and fits an r5.xlarge only while it
	// is empty; a large pod fits only an r5.xlarge.
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
	logPlanVersusBinding(t, pool)

	// A type fits a node's pods when its allocatable holds their requests (allocatable of the pool's types as
	// the nodes report it).
	var problems []string
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
		problems = mixedScaleOutProblems(claims, nodes, pods)
		if len(claims) > 2*replicas {
			problems = append(problems, fmt.Sprintf("%d nodeclaims for %d pods that need one node each", len(claims), 2*replicas))
		}
		return len(problems) == 0, fmt.Sprintf("%d nodeclaims, %d nodes: %s", len(claims), len(nodes), strings.Join(problems, "; ")), nil
	})
	if err != nil {
		t.Fatalf("the scale-out did not end on the planned nodes: %v\n%s", err, strings.Join(problems, "\n"))
	}
	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d pods on %d nodes; %d CreateFleet calls", 2*replicas, len(claims), createFleetCalls(t)-fleetsBefore)
}

// mixedScaleOutProblems returns what is wrong with where a scale-out ended: a NodeClaim without a Node or whose
// Node holds no pod (a planned node left empty), and a Node whose pods would all fit a type of the pool with less
// allocatable cpu and memory (a node holding only pods that fit a smaller node, e.g. a small pod on a large node).
// The types compared are those the pool's Nodes report.
func mixedScaleOutProblems(claims []karpv1.NodeClaim, nodes []corev1.Node, pods []corev1.Pod) []string {
	requests := map[string]corev1.ResourceList{}
	count := map[string]int{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" {
			continue
		}
		if requests[p.Spec.NodeName] == nil {
			requests[p.Spec.NodeName] = corev1.ResourceList{}
		}
		for _, c := range p.Spec.Containers {
			for name, q := range c.Resources.Requests {
				sum := requests[p.Spec.NodeName][name]
				sum.Add(q)
				requests[p.Spec.NodeName][name] = sum
			}
		}
		count[p.Spec.NodeName]++
	}
	allocatable := map[string]corev1.ResourceList{}
	for _, n := range nodes {
		allocatable[n.Labels[corev1.LabelInstanceTypeStable]] = n.Status.Allocatable
	}
	fits := func(req, alloc corev1.ResourceList) bool {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q := req[name]; q.Cmp(alloc[name]) > 0 {
				return false
			}
		}
		return true
	}
	smaller := func(a, b corev1.ResourceList) bool {
		ac, am := a[corev1.ResourceCPU], a[corev1.ResourceMemory]
		bc, bm := b[corev1.ResourceCPU], b[corev1.ResourceMemory]
		return ac.Cmp(bc) <= 0 && am.Cmp(bm) <= 0 && (ac.Cmp(bc) < 0 || am.Cmp(bm) < 0)
	}
	var out []string
	for _, nc := range claims {
		if nc.Status.NodeName == "" || count[nc.Status.NodeName] == 0 {
			out = append(out, fmt.Sprintf("nodeclaim %s (node %q) holds no pod", nc.Name, nc.Status.NodeName))
		}
	}
	for _, n := range nodes {
		if count[n.Name] == 0 {
			continue
		}
		own := n.Labels[corev1.LabelInstanceTypeStable]
		for it, alloc := range allocatable {
			if it != own && smaller(alloc, n.Status.Allocatable) && fits(requests[n.Name], alloc) {
				out = append(out, fmt.Sprintf("node %s (%s) holds only pods that fit a %s", n.Name, own, it))
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// logPlanVersusBinding logs, for every pod of the namespace, the node it was last planned on (its last Nominated
// event: a NodeClaim or a Node) and the node it was bound to, and counts the pods bound elsewhere than planned.
func logPlanVersusBinding(t *testing.T, namespace string) {
	t.Helper()
	ctx := context.Background()
	events := &corev1.EventList{}
	if err := env.Client.List(ctx, events, client.InNamespace(namespace)); err != nil {
		t.Logf("listing events: %v", err)
		return
	}
	type plan struct {
		target string
		at     time.Time
		count  int
	}
	planned := map[string]plan{}
	for _, e := range events.Items {
		if e.Reason != "Nominated" || e.InvolvedObject.Kind != "Pod" {
			continue
		}
		at := e.LastTimestamp.Time
		if at.IsZero() {
			at = e.EventTime.Time
		}
		cur := planned[e.InvolvedObject.Name]
		cur.count++
		if at.After(cur.at) || cur.target == "" {
			cur.target, cur.at = strings.TrimPrefix(e.Message, "Pod should schedule on: "), at
		}
		planned[e.InvolvedObject.Name] = cur
	}
	claims, err := env.NodeClaims(ctx, namespace)
	if err != nil {
		t.Logf("listing nodeclaims: %v", err)
		return
	}
	nodeOf := map[string]string{}
	for _, nc := range claims {
		nodeOf["nodeclaim/"+nc.Name] = nc.Status.NodeName
	}
	pods, err := env.Pods(ctx, namespace, nil)
	if err != nil {
		t.Logf("listing pods: %v", err)
		return
	}
	var moved []string
	for _, p := range pods {
		pl := planned[p.Name]
		node := nodeOf[pl.target]
		if strings.HasPrefix(pl.target, "node/") {
			node = strings.TrimPrefix(pl.target, "node/")
		}
		if node != p.Spec.NodeName {
			moved = append(moved, fmt.Sprintf("%s (%s): planned %s (node %q, %d plans), bound to %s", p.Name, p.Labels["app"],
				pl.target, node, pl.count, p.Spec.NodeName))
		}
	}
	sort.Strings(moved)
	t.Logf("%d of %d pods bound elsewhere than last planned:\n%s", len(moved), len(pods), strings.Join(moved, "\n"))
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
