//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/test/e2e/framework"
)

// TestPodENIRequestGetsANode: a pod with security groups of its own (it requests vpc.amazonaws.com/pod-eni, as the
// VPC resource controller's webhook makes such pods do) gets a node of a trunking-compatible type, whose NodeClaim
// and Node both offer branch interfaces.
func TestPodENIRequestGetsANode(t *testing.T) {
	const pool = "podeni"
	setupPool(t, pool, framework.PoolOptions{})
	ctx := context.Background()
	d := framework.Deployment(pool, "sgp", pool, 1, "100m", "128Mi")
	one := resource.MustParse("1")
	d.Spec.Template.Spec.Containers[0].Resources.Requests["vpc.amazonaws.com/pod-eni"] = one
	d.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"vpc.amazonaws.com/pod-eni": one}
	if err := env.Client.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, pool, map[string]string{"app": "sgp"}, 1, 2*time.Minute)
	claim := onlyNodeClaim(t, pool)
	if q := claim.Status.Capacity["vpc.amazonaws.com/pod-eni"]; q.IsZero() {
		t.Errorf("NodeClaim %s capacity %v offers no vpc.amazonaws.com/pod-eni", claim.Name, claim.Status.Capacity)
	}
	node := &corev1.Node{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: claim.Status.NodeName}, node); err != nil {
		t.Fatal(err)
	}
	if q := node.Status.Allocatable["vpc.amazonaws.com/pod-eni"]; q.IsZero() {
		t.Errorf("Node %s allocatable %v offers no vpc.amazonaws.com/pod-eni", node.Name, node.Status.Allocatable)
	}
}
