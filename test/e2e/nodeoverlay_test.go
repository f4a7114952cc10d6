//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// applyOverlay creates the overlay (deleted at cleanup) and waits until the controller reports it Ready, so the
// pods created next are provisioned with it.
func applyOverlay(t *testing.T, o *karpv1alpha1.NodeOverlay) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Create(ctx, o); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	err := framework.Poll(ctx, 30*time.Second, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		cur := &karpv1alpha1.NodeOverlay{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
			return false, "", err
		}
		c := cur.GetCondition(karpv1.ConditionTypeReady)
		if c == nil {
			return false, "no Ready condition", nil
		}
		return c.Status == metav1.ConditionTrue && c.ObservedGeneration == cur.Generation, fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message), nil
	})
	if err != nil {
		t.Fatalf("NodeOverlay %s: %v", o.Name, err)
	}
}

func poolOverlay(pool string, reqs ...karpv1alpha1.NodeSelectorRequirement) *karpv1alpha1.NodeOverlay {
	o := &karpv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: pool}}
	o.Spec.Requirements = append([]karpv1alpha1.NodeSelectorRequirement{
		{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{pool}},
	}, reqs...)
	return o
}

// TestNodeOverlayPrice: c5.large is cheaper than m5.large on-demand in the simulator's price list; an overlay
// taking 50% off the m5 family in this NodePool makes Dovetail launch an m5.large for a pod both fit.
func TestNodeOverlayPrice(t *testing.T) {
	const pool = "overlay-price"
	setupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"c5.large", "m5.large"}, CapacityTypes: []string{"on-demand"}})
	o := poolOverlay(pool, karpv1alpha1.NodeSelectorRequirement{Key: "karpenter.k8s.aws/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5"}})
	o.Spec.PriceAdjustment = ptr.To("-50%")
	applyOverlay(t, o)

	if err := env.Client.Create(context.Background(), framework.Deployment(pool, "app", pool, 1, "1", "1Gi")); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "app"}, 1, 45*time.Second)
	claim := onlyNodeClaim(t, pool)
	if got := claim.Labels[corev1.LabelInstanceTypeStable]; got != "m5.large" {
		t.Errorf("launched %s, want m5.large (made cheaper than c5.large by the overlay)", got)
	}
	ctl := filepath.Join(framework.RepoRoot(), "bin", "dovetailctl")
	if out := runCtl(t, ctl, "explain", "node", claim.Status.NodeName); !strings.Contains(out, "NodeOverlay "+pool+" sets the price of m5.large") {
		t.Errorf("explain node does not name the overlay behind the price:\n%s", out)
	}
}

// TestNodeOverlayCapacity: no instance type has example.com/device; an overlay adding one to c5.large in this
// NodePool lets a pod requesting it provision. The test plays the device plugin: it adds the resource to the
// node's status once the node registers, as the plugin would.
func TestNodeOverlayCapacity(t *testing.T) {
	const pool = "overlay-device"
	const device = corev1.ResourceName("example.com/device")
	setupPool(t, pool, framework.PoolOptions{InstanceTypes: []string{"c5.large"}, CapacityTypes: []string{"on-demand"}})
	o := poolOverlay(pool)
	o.Spec.Capacity = corev1.ResourceList{device: resource.MustParse("1")}
	applyOverlay(t, o)

	ctx := context.Background()
	d := framework.Deployment(pool, "app", pool, 1, "500m", "512Mi")
	one := resource.MustParse("1")
	d.Spec.Template.Spec.Containers[0].Resources.Requests[device] = one
	d.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{device: one}
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	claim := onlyNodeClaim(t, pool)
	if q := claim.Status.Capacity[device]; q.Cmp(one) != 0 {
		t.Errorf("NodeClaim %s capacity of %s = %s, want 1 (from the overlay)", claim.Name, device, q.String())
	}
	// The device plugin's part.
	err := framework.Poll(ctx, 20*time.Second, 500*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		node := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: claim.Status.NodeName}, node); err != nil {
			return false, "", err
		}
		patch := client.MergeFrom(node.DeepCopy())
		node.Status.Capacity[device] = one
		node.Status.Allocatable[device] = one
		if err := env.Client.Status().Patch(ctx, node, patch); err != nil {
			return false, err.Error(), nil
		}
		return true, "", nil
	})
	if err != nil {
		t.Fatalf("adding %s to node %s: %v", device, claim.Status.NodeName, err)
	}
	waitRunning(t, pool, map[string]string{"app": "app"}, 1, 45*time.Second)
	ctl := filepath.Join(framework.RepoRoot(), "bin", "dovetailctl")
	if out := runCtl(t, ctl, "explain", "node", claim.Status.NodeName); !strings.Contains(out, "NodeOverlay "+pool+" adds example.com/device: 1 to c5.large") {
		t.Errorf("explain node does not name the overlay behind the capacity:\n%s", out)
	}
}
