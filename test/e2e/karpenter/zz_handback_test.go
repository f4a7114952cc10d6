//go:build e2e

package karpenter

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// hbPool is the hand-back scenario's NodePool, EC2NodeClass and namespace (m5.large on demand, one pod a node).
const hbPool = "kp-handback"

// TestTakeOverAndHandBack: Karpenter's own controller builds a cluster, Dovetail takes it over, Karpenter takes it
// back. Karpenter launches two nodes and is stopped; Dovetail starts, adopts both instances (its cluster-UID tag),
// restamps their NodeClaims in its hash schemes without marking them drifted, replaces nothing, and launches a
// third node for a third pod. Dovetail is stopped and Karpenter starts again: it keeps all three NodeClaims,
// restamps them in its own schemes, and when the EC2NodeClass changes it drifts and replaces all three, the one
// Dovetail launched included. No instance is left without a NodeClaim at any step.
func TestTakeOverAndHandBack(t *testing.T) {
	ctx := context.Background()
	var running *framework.Karpenter
	startKarpenter := func() {
		t.Helper()
		k, err := env.StartKarpenter(ctx, framework.KarpenterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		running = k
	}
	stopKarpenter := func() {
		t.Helper()
		if running == nil {
			return
		}
		if err := running.Stop(30 * time.Second); err != nil {
			t.Errorf("stopping karpenter: %v", err)
		}
		running = nil
	}
	startKarpenter()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- karpenter log (last 60 lines) ---\n%s", env.LogTail("karpenter", 60))
			t.Logf("--- dovetail log (last 60 lines) ---\n%s", env.LogTail("dovetail", 60))
		}
		stopKarpenter()
		if err := env.StopController(30 * time.Second); err != nil {
			t.Errorf("stopping dovetail: %v", err)
		}
	})
	setupHandBackPool(t)
	d := framework.Deployment(hbPool, "app", hbPool, 2, "1", "1Gi")
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	karpenters := waitClaims(t, 2, "Karpenter's launches", func(nc karpv1.NodeClaim) string {
		if nc.Annotations["karpenter.k8s.aws/tagged"] != "true" {
			return "not tagged by Karpenter yet"
		}
		return ""
	})
	checkEveryInstanceClaimed(t)

	// Dovetail takes over.
	stopKarpenter()
	if err := env.StartController(ctx); err != nil {
		t.Fatal(err)
	}
	uid, err := env.ClusterUID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = framework.Poll(ctx, 2*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		var waiting []string
		for _, nc := range karpenters {
			if instanceTags(t, framework.InstanceID(nc.Status.ProviderID))[tags.ClusterUID] != uid {
				waiting = append(waiting, nc.Name)
			}
		}
		return len(waiting) == 0, fmt.Sprintf("instances of %v not adopted", waiting), nil
	})
	if err != nil {
		t.Fatalf("adoption: %v", err)
	}
	err = framework.Consistently(ctx, 20*time.Second, 2*time.Second, func(ctx context.Context) error {
		claims, err := env.NodeClaims(ctx, hbPool)
		if err != nil {
			return err
		}
		if names(claims) != names(karpenters) {
			return fmt.Errorf("nodeclaims %s, want Karpenter's %s kept", names(claims), names(karpenters))
		}
		for _, nc := range claims {
			if nc.IsTrue(karpv1.ConditionTypeDrifted) {
				return fmt.Errorf("nodeclaim %s marked drifted after the takeover", nc.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	scaleHandBack(t, 3)
	all := waitClaims(t, 3, "Dovetail's launch", func(nc karpv1.NodeClaim) string {
		if nc.Annotations[karpv1.NodePoolHashVersionAnnotationKey] == "v3" {
			return "still in Karpenter's nodepool hash scheme"
		}
		return ""
	})
	var dovetails []string
	for _, nc := range all {
		if !slices.ContainsFunc(karpenters, func(k karpv1.NodeClaim) bool { return k.Name == nc.Name }) {
			dovetails = append(dovetails, nc.Name)
		}
	}
	if len(dovetails) != 1 {
		t.Fatalf("nodeclaims %s: want Karpenter's two and one of Dovetail's", names(all))
	}
	checkEveryInstanceClaimed(t)

	// Karpenter takes the cluster back and manages Dovetail's node too.
	if err := env.StopController(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	startKarpenter()
	waitClaims(t, 3, "Karpenter restamping", func(nc karpv1.NodeClaim) string {
		if v := nc.Annotations[karpv1.NodePoolHashVersionAnnotationKey]; v != "v3" {
			return "nodepool hash version " + v
		}
		if !slices.ContainsFunc(all, func(a karpv1.NodeClaim) bool { return a.Name == nc.Name }) {
			return "launched after the hand-back"
		}
		return ""
	})
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: hbPool}}
	if err := env.Client.Patch(ctx, nc, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"tags":{"handback":"1"}}}`))); err != nil {
		t.Fatal(err)
	}
	waitClaims(t, 3, "Karpenter's drift replacements", func(nc karpv1.NodeClaim) string {
		if slices.ContainsFunc(all, func(a karpv1.NodeClaim) bool { return a.Name == nc.Name }) {
			return "not replaced yet"
		}
		return ""
	})
	for _, old := range all {
		waitTerminated(t, framework.InstanceID(old.Status.ProviderID))
	}
	checkEveryInstanceClaimed(t)
	t.Logf("Karpenter replaced the drifted nodeclaims %s, Dovetail's %v among them", names(all), dovetails)
}

// setupHandBackPool applies the NodePool and EC2NodeClass (m5.large on demand, so no cheaper replacement tempts
// either controller) and the namespace; cleanup removes them through whichever controller runs then.
func setupHandBackPool(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	if err := framework.EnsureNamespace(ctx, env.Client, hbPool); err != nil {
		t.Fatal(err)
	}
	objs, err := framework.NodePool(hbPool, framework.PoolOptions{InstanceTypes: []string{"m5.large"},
		CapacityTypes: []string{karpv1.CapacityTypeOnDemand}, ConsolidateAfter: "5s", Budgets: []map[string]any{{"nodes": "100%"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := framework.Apply(ctx, env.Client, objs...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, obj := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hbPool}},
			&karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: hbPool}}} {
			if err := env.Client.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleanup: deleting %T %s: %v", obj, obj.GetName(), err)
			}
		}
		err := framework.Poll(ctx, 3*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
			claims, err := env.NodeClaims(ctx, hbPool)
			return len(claims) == 0, fmt.Sprintf("%d nodeclaims left", len(claims)), err
		})
		if err != nil {
			t.Errorf("cleanup of nodepool %s: %v", hbPool, err)
		}
		if err := env.Client.Delete(ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: hbPool}}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting ec2nodeclass %s: %v", hbPool, err)
		}
		waitGone(t, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: hbPool}})
	})
}

func scaleHandBack(t *testing.T, replicas int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: hbPool, Name: "app"}, d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptr.To(replicas)
	if err := env.Client.Update(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

// waitClaims waits until the pool has n registered NodeClaims, each accepted by check (which returns why not), and
// n Running pods, and returns the NodeClaims.
func waitClaims(t *testing.T, n int, what string, check func(karpv1.NodeClaim) string) []karpv1.NodeClaim {
	t.Helper()
	var claims []karpv1.NodeClaim
	err := framework.Poll(context.Background(), 4*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
		var err error
		if claims, err = env.NodeClaims(ctx, hbPool); err != nil {
			return false, "", err
		}
		p, err := framework.GetProgress(ctx, env.Client, hbPool, client.MatchingLabels{"app": "app"})
		if err != nil {
			return false, "", err
		}
		if len(claims) != n || p.PodsRunning != n || p.Pods != n {
			return false, fmt.Sprintf("%d nodeclaims %s; %s", len(claims), names(claims), p), nil
		}
		for _, nc := range claims {
			if nc.Status.NodeName == "" || !nc.DeletionTimestamp.IsZero() {
				return false, "nodeclaim " + nc.Name + " not registered or going", nil
			}
			if why := check(nc); why != "" {
				return false, "nodeclaim " + nc.Name + ": " + why, nil
			}
		}
		return true, "", nil
	})
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, env.Describe(hbPool, hbPool))
	}
	return claims
}

func names(claims []karpv1.NodeClaim) string {
	var out []string
	for _, nc := range claims {
		out = append(out, nc.Name)
	}
	slices.Sort(out)
	return fmt.Sprint(out)
}

// checkEveryInstanceClaimed: every running instance with the cluster's name tag belongs to a NodeClaim.
func checkEveryInstanceClaimed(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	claims := &karpv1.NodeClaimList{}
	if err := env.Client.List(ctx, claims); err != nil {
		t.Fatal(err)
	}
	owned := map[string]bool{}
	for _, c := range claims.Items {
		owned[framework.InstanceID(c.Status.ProviderID)] = true
	}
	out, err := env.EC2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			id := aws.ToString(i.InstanceId)
			if st := i.State.Name; (st == "running" || st == "pending") && !owned[id] {
				t.Errorf("instance %s (%s) belongs to no NodeClaim", id, st)
			}
		}
	}
}
