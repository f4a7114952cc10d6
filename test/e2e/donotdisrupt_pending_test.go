//go:build e2e && e2e_pending

package e2e

// Pending (make test-e2e-pending): on the local stack the do-not-disrupt pod is removed within a second of the
// NodeClaim deletion instead of after the 30 s terminationGracePeriod; the envtest suite of the termination
// controllers passes, so the difference is still to be found.

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestDoNotDisruptHonoursGracePeriod (scenario 2): a pod annotated karpenter.sh/do-not-disrupt keeps its node
// when the NodeClaim is deleted until the NodeClaim's terminationGracePeriod (30 s) is over, and no longer.
func TestDoNotDisruptHonoursGracePeriod(t *testing.T) {
	ctx := context.Background()
	const pool = "dnd"
	setupPool(t, pool, framework.PoolOptions{TerminationGracePeriod: "30s"})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: pool, Name: "precious", Labels: map[string]string{"app": "precious"},
			Annotations: map[string]string{"karpenter.sh/do-not-disrupt": "true"}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{karpv1.NodePoolLabelKey: pool},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
		},
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "precious"}, 1, 2*time.Minute)
	claim := onlyNodeClaim(t, pool)
	deleted := time.Now()
	if err := env.Client.Delete(ctx, &claim); err != nil {
		t.Fatal(err)
	}
	var gone time.Duration
	err := framework.Poll(ctx, 90*time.Second, 250*time.Millisecond, func(ctx context.Context) (bool, string, error) {
		p := &corev1.Pod{}
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(pod), p)
		if apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil) {
			gone = time.Since(deleted)
			return true, "", nil
		}
		return false, fmt.Sprintf("pod still there after %.0fs", time.Since(deleted).Seconds()), err
	})
	if err != nil {
		t.Fatalf("pod was not removed after the grace period: %v", err)
	}
	// The pod must survive the grace period (allowing 2 s for clock skew between the controller and this test).
	if gone < 28*time.Second {
		t.Errorf("do-not-disrupt pod was removed %.1fs after the NodeClaim was deleted, before the 30s terminationGracePeriod", gone.Seconds())
	}
	t.Logf("do-not-disrupt pod removed %.1fs after the NodeClaim was deleted", gone.Seconds())
}
