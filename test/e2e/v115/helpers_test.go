//go:build e2e

package v115

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/test/e2e/framework"
)

// setupPool applies a NodePool and EC2NodeClass named name, with startupTaints when taints are given, and a
// namespace of the same name; the cleanup deletes the namespace and the NodePool and waits until the NodePool's
// NodeClaims are gone.
func setupPool(t *testing.T, name string, opts framework.PoolOptions, taints ...corev1.Taint) {
	t.Helper()
	ctx := context.Background()
	if err := framework.EnsureNamespace(ctx, env.Client, name); err != nil {
		t.Fatal(err)
	}
	objs, err := framework.NodePool(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() != "NodePool" || len(taints) == 0 {
			continue
		}
		var ts []any
		for _, taint := range taints {
			ts = append(ts, map[string]any{"key": taint.Key, "effect": string(taint.Effect)})
		}
		if err := unstructured.SetNestedSlice(o.Object, ts, "spec", "template", "spec", "startupTaints"); err != nil {
			t.Fatal(err)
		}
	}
	if err := framework.Apply(ctx, env.Client, objs...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := env.Client.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting namespace %s: %v", name, err)
		}
		pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := env.Client.Delete(ctx, pool); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting nodepool %s: %v", name, err)
			return
		}
		err := framework.Poll(ctx, 3*time.Minute, time.Second, func(ctx context.Context) (bool, string, error) {
			claims, err := env.NodeClaims(ctx, name)
			return len(claims) == 0, fmt.Sprintf("%d nodeclaims left", len(claims)), err
		})
		if err != nil {
			t.Errorf("cleanup of nodepool %s: %v", name, err)
		}
	})
}

// csiNodePlugin plays a CSI driver's node plugin on the nodes of the pools until the test ends: on each new
// Node it writes the CSINode that reports the driver with an attach limit of limit (owned by the Node, as the
// kubelet's is), then lifts the startup taint that kept pods off until then, as the EBS CSI driver lifts
// ebs.csi.aws.com/agent-not-ready.
func csiNodePlugin(t *testing.T, driver string, limit int32, taintKey string, pools ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		ticker := time.NewTicker(200 * time.Millisecond)
		defer ticker.Stop()
		for {
			for _, pool := range pools {
				nodes, err := env.Nodes(ctx, pool)
				if err != nil {
					continue
				}
				for _, n := range nodes {
					if err := registerDriver(ctx, &n, driver, limit, taintKey); err != nil && ctx.Err() == nil {
						t.Logf("CSI node plugin on %s: %v", n.Name, err)
					}
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
}

func registerDriver(ctx context.Context, n *corev1.Node, driver string, limit int32, taintKey string) error {
	csi := &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}}},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: driver, NodeID: n.Name,
			Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To(limit)}}}},
	}
	if err := env.Client.Create(ctx, csi); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating csinode: %w", err)
	}
	for _, taint := range n.Spec.Taints {
		if taint.Key == taintKey {
			return env.RemoveTaint(ctx, n.Name, taintKey)
		}
	}
	return nil
}

// waitRunning waits until n pods with the labels are Running in the namespace.
func waitRunning(t *testing.T, namespace string, labels map[string]string, n int, timeout time.Duration) {
	t.Helper()
	err := framework.Poll(context.Background(), timeout, time.Second, func(ctx context.Context) (bool, string, error) {
		p, err := framework.GetProgress(ctx, env.Client, namespace, client.MatchingLabels(labels))
		return p.PodsRunning >= n, p.String(), err
	})
	if err != nil {
		t.Fatalf("waiting for %d Running pods %v in %s: %v\n%s", n, labels, namespace, err, env.Describe(namespace, namespace))
	}
}
