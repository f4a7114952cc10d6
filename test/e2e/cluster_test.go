//go:build e2e

package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestClusterUpIsIdempotent runs cluster-up against the running stack: it must return at once and leave the
// same cluster (same etcd data) serving.
func TestClusterUpIsIdempotent(t *testing.T) {
	ctx := context.Background()
	before := &corev1.Namespace{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "kube-system"}, before); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := env.ClusterUp(ctx); err != nil {
		t.Fatalf("second cluster-up: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("second cluster-up took %s; a running cluster should be left alone", d)
	}
	after := &corev1.Namespace{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "kube-system"}, after); err != nil {
		t.Fatalf("cluster not serving after a second cluster-up: %v", err)
	}
	if before.UID != after.UID {
		t.Errorf("kube-system UID changed from %s to %s: cluster-up replaced a running cluster", before.UID, after.UID)
	}
}
