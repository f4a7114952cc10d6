package static_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/nodepool/static"
	"github.com/dovetail/dovetail/pkg/test"
)

const timeout = 30 * time.Second

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// claims returns the NodePool's NodeClaims: those not being deleted, and those being deleted.
func claims(t *testing.T, kube client.Client, pool string) (active, deleting []karpv1.NodeClaim) {
	t.Helper()
	list := &karpv1.NodeClaimList{}
	must(t, kube.List(context.Background(), list, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}))
	for _, nc := range list.Items {
		if nc.DeletionTimestamp.IsZero() {
			active = append(active, nc)
		} else {
			deleting = append(deleting, nc)
		}
	}
	return active, deleting
}

func setReplicas(t *testing.T, kube client.Client, pool string, n int64) {
	t.Helper()
	np := &karpv1.NodePool{}
	must(t, kube.Get(context.Background(), client.ObjectKey{Name: pool}, np))
	stored := np.DeepCopy()
	np.Spec.Replicas = &n
	must(t, kube.Patch(context.Background(), np, client.MergeFrom(stored)))
}

// initialize marks every NodeClaim Initialized, as lifecycle would once its node is up.
func initialize(t *testing.T, kube client.Client, list []karpv1.NodeClaim) {
	t.Helper()
	for i := range list {
		nc := &list[i]
		if nc.IsTrue(karpv1.ConditionTypeInitialized) {
			continue
		}
		meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: karpv1.ReasonInitialized})
		must(t, kube.Status().Update(context.Background(), nc))
	}
}

func release(t *testing.T, kube client.Client, list []karpv1.NodeClaim) {
	t.Helper()
	for i := range list {
		nc := &list[i]
		stored := nc.DeepCopy()
		nc.Finalizers = nil
		must(t, client.IgnoreNotFound(kube.Patch(context.Background(), nc, client.MergeFrom(stored))))
	}
}

// TestStaticNodePool: a static NodePool gets its replicas with no pod at all; a scale-down deletes one node at
// a time under a budget of 1 (the finalizer, which no termination controller removes here, holds each deletion
// open); limits.nodes caps a scale-up; a drifted node is replaced before it is deleted.
func TestStaticNodePool(t *testing.T) {
	env := test.StartControllerEnv(t, func(d deps.Deps) test.Registrar { return static.NewController(d) })
	ctx := context.Background()
	kube := env.Client
	nodeClass := test.EC2NodeClass("default", "test-cluster").Obj()
	must(t, kube.Create(ctx, nodeClass))

	np := test.NodePool("static").Replicas(3).Budget("1").Limit("nodes", "4").Obj()
	np.Spec.Limits = karpv1.Limits{"nodes": np.Spec.Limits["nodes"]}
	must(t, kube.Create(ctx, np))

	// Scale up from nothing.
	test.Eventually(t, timeout, func() (bool, string) {
		active, _ := claims(t, kube, "static")
		return len(active) == 3, fmt.Sprintf("%d nodeclaims", len(active))
	})
	active, _ := claims(t, kube, "static")
	for _, nc := range active {
		i := slices.IndexFunc(nc.Spec.Requirements, func(r karpv1.NodeSelectorRequirementWithMinValues) bool {
			return r.Key == corev1.LabelInstanceTypeStable
		})
		if i < 0 || len(nc.Spec.Requirements[i].Values) == 0 || !slices.Contains(nc.Finalizers, karpv1.TerminationFinalizer) {
			t.Errorf("nodeclaim %s: requirements %v finalizers %v", nc.Name, nc.Spec.Requirements, nc.Finalizers)
		}
	}
	initialize(t, kube, active)

	// limits.nodes (4) caps a scale-up to 6.
	setReplicas(t, kube, "static", 6)
	test.Eventually(t, timeout, func() (bool, string) {
		active, _ := claims(t, kube, "static")
		return len(active) == 4, fmt.Sprintf("%d nodeclaims", len(active))
	})
	for i := 0; i < 20; i++ {
		if active, _ := claims(t, kube, "static"); len(active) > 4 {
			t.Fatalf("%d nodeclaims above limits.nodes 4", len(active))
		}
	}
	active, _ = claims(t, kube, "static")
	initialize(t, kube, active)

	// Scale down to 1 under a budget of 1: one deletion at a time.
	setReplicas(t, kube, "static", 1)
	for want := 3; want >= 1; want-- {
		test.Eventually(t, timeout, func() (bool, string) {
			active, deleting := claims(t, kube, "static")
			if len(deleting) > 1 {
				t.Fatalf("%d nodeclaims deleting at once under a budget of 1", len(deleting))
			}
			return len(active) == want && len(deleting) == 1, fmt.Sprintf("%d active, %d deleting", len(active), len(deleting))
		})
		_, deleting := claims(t, kube, "static")
		release(t, kube, deleting)
	}
	test.Eventually(t, timeout, func() (bool, string) {
		active, deleting := claims(t, kube, "static")
		return len(active) == 1 && len(deleting) == 0, fmt.Sprintf("%d active, %d deleting", len(active), len(deleting))
	})

	// Drift: the replacement comes first, the drifted node goes once the replacement is initialized.
	active, _ = claims(t, kube, "static")
	old := active[0]
	meta.SetStatusCondition(&old.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeDrifted, Status: metav1.ConditionTrue, Reason: karpv1.ReasonNodeClassDrift})
	must(t, kube.Status().Update(ctx, &old))
	test.Eventually(t, timeout, func() (bool, string) {
		active, deleting := claims(t, kube, "static")
		return len(active) == 2 && len(deleting) == 0, fmt.Sprintf("%d active, %d deleting", len(active), len(deleting))
	})
	active, _ = claims(t, kube, "static")
	initialize(t, kube, active)
	test.Eventually(t, timeout, func() (bool, string) {
		active, deleting := claims(t, kube, "static")
		return len(active) == 1 && len(deleting) == 1 && deleting[0].Name == old.Name,
			fmt.Sprintf("%d active, %d deleting", len(active), len(deleting))
	})
}
