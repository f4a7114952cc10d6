package consistency_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclaim/consistency"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestIssues(t *testing.T) {
	nc := test.NodeClaim("a", "default").Requests(corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"), "example.com/gpu": resource.MustParse("0")}).Obj()
	nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"),
		"example.com/gpu": resource.MustParse("1")}
	tests := []struct {
		name string
		node *corev1.Node
		want int
	}{
		{name: "as launched", node: test.Node("n", "").Capacity(corev1.ResourceCPU, "4").Capacity(corev1.ResourceMemory, "16Gi").Obj()},
		{name: "within 10%", node: test.Node("n", "").Capacity(corev1.ResourceCPU, "3700m").Capacity(corev1.ResourceMemory, "15Gi").Obj()},
		{name: "cpu short", node: test.Node("n", "").Capacity(corev1.ResourceCPU, "2").Capacity(corev1.ResourceMemory, "16Gi").Obj(), want: 1},
		{name: "both short", node: test.Node("n", "").Capacity(corev1.ResourceCPU, "2").Capacity(corev1.ResourceMemory, "1Gi").Obj(), want: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := consistency.Issues(nc, tt.node); len(got) != tt.want {
				t.Errorf("Issues = %q, want %d", got, tt.want)
			}
		})
	}
}

func TestConsistentStateFound(t *testing.T) {
	env := test.StartControllerEnv(t)
	rec := test.NewRecorder()
	d := env.Deps
	d.Recorder = rec
	c := consistency.NewController(d)
	ctx := context.Background()
	create := func(name, nodeCPU string) {
		t.Helper()
		providerID := "fake:///" + name
		nc := test.NodeClaim(name, "default").ProviderID(providerID).NodeName(name + "-node").
			Requests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}).Obj()
		if err := env.Env.Client.Create(ctx, nc); err != nil {
			t.Fatal(err)
		}
		nc.Status.ProviderID, nc.Status.NodeName = providerID, name+"-node"
		nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
		nc.SetTrue(karpv1.ConditionTypeInitialized, karpv1.ReasonInitialized)
		if err := env.Env.Client.Status().Update(ctx, nc); err != nil {
			t.Fatal(err)
		}
		n := test.Node(name+"-node", providerID).Capacity(corev1.ResourceCPU, nodeCPU).Obj()
		status := n.Status
		if err := env.Env.Client.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.Status = status
		if err := env.Env.Client.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	create("good", "4")
	create("short", "2")
	check := func(name string, status metav1.ConditionStatus, reason string) {
		t.Helper()
		test.Eventually(t, 20*time.Second, func() (bool, string) {
			if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
				return false, err.Error()
			}
			nc := &karpv1.NodeClaim{}
			if err := env.Env.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
				return false, err.Error()
			}
			got := nc.GetCondition(karpv1.ConditionTypeConsistentStateFound)
			if got == nil || got.Status != status || got.Reason != reason {
				// Not yet in the cache: check again now rather than after ScanPeriod.
				env.Clock.Step(consistency.ScanPeriod)
				return false, "condition " + karpv1.ConditionTypeConsistentStateFound + " not as wanted yet"
			}
			return true, ""
		})
	}
	check("good", metav1.ConditionTrue, "ConsistentStateFound")
	check("short", metav1.ConditionFalse, "ConsistencyCheckFailed")
	for _, e := range rec.WithReason("FailedConsistencyCheck") {
		if e.Kind != "NodeClaim" || e.Name != "short" || e.Type != corev1.EventTypeWarning {
			t.Errorf("FailedConsistencyCheck event %+v, want Warnings on NodeClaim short only", e)
		}
	}
	if len(rec.WithReason("FailedConsistencyCheck")) == 0 {
		t.Error("no FailedConsistencyCheck event")
	}
}
