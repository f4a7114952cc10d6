//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestReservedCapacity: a capacity reservation of 2 m5.large in us-west-2a, selected by tag; three
// pods that each need an m5.large of their own get two nodes in the reservation (capacity type reserved, with
// the reservation labels) and one on-demand node; explain and simulate show the reserved offering.
func TestReservedCapacity(t *testing.T) {
	ctx := context.Background()
	const pool = "reserved"
	ctl := filepath.Join(framework.RepoRoot(), "bin", "dovetailctl")
	if _, err := os.Stat(ctl); err != nil {
		t.Fatalf("%s: %v (run make build first)", ctl, err)
	}
	if err := simAdmin(ctx, http.MethodPost, "capacity-reservations", map[string]any{
		"account": "123456789012", "instanceType": "m5.large", "zone": "us-west-2a", "count": 2,
		"tags": map[string]string{"e2e": pool},
	}); err != nil {
		t.Fatal(err)
	}
	opts := framework.PoolOptions{InstanceTypes: []string{"m5.large"}, CapacityTypes: []string{"reserved", "on-demand"}}
	setupPool(t, pool, opts)
	objs, err := framework.NodePool(pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "EC2NodeClass" {
			terms := []any{map[string]any{"tags": map[string]any{"e2e": pool}}}
			if err := unstructured.SetNestedSlice(o.Object, terms, "spec", "capacityReservationSelectorTerms"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := framework.Apply(ctx, env.Client, objs...); err != nil {
		t.Fatal(err)
	}
	var crID string
	err = framework.Poll(ctx, 30*time.Second, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		nc := &awsv1.EC2NodeClass{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: pool}, nc); err != nil {
			return false, "", err
		}
		if len(nc.Status.CapacityReservations) != 1 || !nc.IsTrue(karpv1.ConditionTypeReady) {
			return false, fmt.Sprintf("status.capacityReservations %+v", nc.Status.CapacityReservations), nil
		}
		crID = nc.Status.CapacityReservations[0].ID
		return true, "", nil
	})
	if err != nil {
		t.Fatalf("EC2NodeClass status: %v", err)
	}

	start := time.Now()
	// 1500m of cpu: one pod per m5.large (2 vCPU).
	if err := env.Client.Create(ctx, framework.Deployment(pool, "big", pool, 3, "1500m", "1Gi")); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "big"}, 3, 2*time.Minute)
	t.Logf("3 pods running after %s", time.Since(start).Round(time.Second))

	claims, err := env.NodeClaims(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var reservedNode string
	for _, c := range claims {
		got = append(got, strings.Join([]string{c.Labels[karpv1.CapacityTypeLabelKey], c.Labels[awsv1.LabelCapacityReservationID],
			c.Labels[awsv1.LabelCapacityReservationType], c.Labels[awsv1.LabelCapacityReservationInterruptible]}, " "))
		if c.Labels[karpv1.CapacityTypeLabelKey] == "reserved" {
			reservedNode = c.Status.NodeName
		}
	}
	sort.Strings(got)
	want := []string{"on-demand   ", "reserved " + crID + " default false", "reserved " + crID + " default false"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("NodeClaims (capacity type, reservation id, type, interruptible) = %q, want %q", got, want)
	}
	nodes, err := env.Nodes(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Name == reservedNode && (n.Labels[awsv1.LabelCapacityReservationID] != crID || n.Labels[karpv1.CapacityTypeLabelKey] != "reserved") {
			t.Errorf("node %s labels %v lack the reservation", n.Name, n.Labels)
		}
	}

	// explain shows the node's reservation; simulate, given the cluster's NodePool and EC2NodeClass (with its
	// resolved reservations), plans two more such pods on reserved m5.large in the reservation's zone.
	out := runCtl(t, ctl, "explain", "node", reservedNode)
	if want := "capacity type: reserved\n  capacity reservation: " + crID + "  type: default  interruptible: false"; !strings.Contains(out, want) {
		t.Errorf("explain node output lacks %q:\n%s", want, out)
	}
	dir := t.TempDir()
	var classes []any
	for _, gvk := range []string{"NodePool", "EC2NodeClass"} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(map[string]string{"NodePool": "karpenter.sh/v1", "EC2NodeClass": "karpenter.k8s.aws/v1"}[gvk])
		u.SetKind(gvk)
		if err := env.Client.Get(ctx, client.ObjectKey{Name: pool}, u); err != nil {
			t.Fatal(err)
		}
		classes = append(classes, u.Object)
	}
	more := framework.Deployment(pool, "more", pool, 2, "1500m", "1Gi")
	more.APIVersion, more.Kind = "apps/v1", "Deployment"
	writeJSON(t, filepath.Join(dir, "nodepools.json"), classes)
	writeJSON(t, filepath.Join(dir, "pods.json"), []any{more})
	out = runCtl(t, ctl, "simulate", "--pods", filepath.Join(dir, "pods.json"), "--nodepools", filepath.Join(dir, "nodepools.json"))
	if !regexp.MustCompile(`(?m)^` + pool + `\s+m5\.large\s+us-west-2a\s+reserved\s+2\s+2\s`).MatchString(out) {
		t.Errorf("simulate does not plan 2 reserved m5.large in us-west-2a:\n%s", out)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
