package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// SetupPool applies a NodePool and EC2NodeClass named name and a namespace of the same name, and registers a
// cleanup that deletes the namespace, then the NodePool, and waits until its NodeClaims are gone, so scenarios do
// not leak nodes into each other.
func (s *Stack) SetupPool(t testing.TB, name string, opts PoolOptions) {
	t.Helper()
	ctx := context.Background()
	if err := EnsureNamespace(ctx, s.Client, name); err != nil {
		t.Fatal(err)
	}
	objs, err := NodePool(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(ctx, s.Client, objs...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The workload goes first: a PodDisruptionBudget would otherwise block the drain of the pool's nodes for
		// ever once the pool is gone and no replacement capacity can be launched.
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := s.Client.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting namespace %s: %v", name, err)
		}
		pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := s.Client.Delete(ctx, pool); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting nodepool %s: %v", name, err)
			return
		}
		// Three minutes, and two seconds more per NodeClaim: the full-size fault scenarios leave 100 nodes, whose
		// termination took over three minutes on a machine at load 25.
		timeout := 3 * time.Minute
		if claims, err := s.NodeClaims(ctx, name); err == nil {
			timeout += time.Duration(len(claims)) * 2 * time.Second
		}
		err := Poll(ctx, timeout, time.Second, func(ctx context.Context) (bool, string, error) {
			claims, err := s.NodeClaims(ctx, name)
			return len(claims) == 0, fmt.Sprintf("%d nodeclaims left", len(claims)), err
		})
		if err != nil {
			t.Errorf("cleanup of nodepool %s: %v", name, err)
		}
	})
}

// Namespace creates a namespace for one test and deletes it when the test ends.
func (s *Stack) Namespace(t testing.TB, name string) {
	t.Helper()
	ctx := context.Background()
	if err := EnsureNamespace(ctx, s.Client, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := s.Client.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("cleanup: deleting namespace %s: %v", name, err)
		}
	})
}

// LogNodeClaimEvents logs the events of the pool's NodeClaims (an Unconsolidatable event says why a node stays).
func (s *Stack) LogNodeClaimEvents(t testing.TB, pool string) {
	t.Helper()
	ctx := context.Background()
	ncs, err := s.NodeClaims(ctx, pool)
	if err != nil {
		t.Logf("listing nodeclaims: %v", err)
		return
	}
	for _, nc := range ncs {
		evs, err := s.Events(ctx, "", "NodeClaim", nc.Name)
		if err != nil {
			t.Logf("events of nodeclaim %s: %v", nc.Name, err)
			continue
		}
		t.Logf("events of nodeclaim %s: %v", nc.Name, evs)
	}
}
