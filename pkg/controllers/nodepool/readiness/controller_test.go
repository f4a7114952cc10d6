package readiness

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/test"
)

func nodeClass(name string, ready *metav1.ConditionStatus, msg string) *awsv1.EC2NodeClass {
	nc := test.EC2NodeClass(name, "c").Obj()
	if ready != nil {
		meta.SetStatusCondition(&nc.Status.Conditions, metav1.Condition{Type: karpv1.ConditionTypeReady, Status: *ready, Reason: "R", Message: msg})
	}
	return nc
}

func TestReadiness(t *testing.T) {
	yes, no := metav1.ConditionTrue, metav1.ConditionFalse
	tests := []struct {
		name     string
		np       *karpv1.NodePool
		classes  []client.Object
		want     string // Ready status/reason: message
		wantNCR  string
		wantVald string
	}{
		{"ready", test.NodePool("p").Obj(), []client.Object{nodeClass("default", &yes, "")},
			"True/Ready: ", "True/NodeClassReady: ", "True/ValidationSucceeded: "},
		{"node class missing", test.NodePool("p").Obj(), nil,
			`False/NodeClassNotFound: NodeClassReady: EC2NodeClass "default" not found`,
			`False/NodeClassNotFound: EC2NodeClass "default" not found`, "True/ValidationSucceeded: "},
		{"node class not ready", test.NodePool("p").Obj(), []client.Object{nodeClass("default", &no, "no subnets match")},
			`False/NotReady: NodeClassReady: EC2NodeClass "default" is not ready: no subnets match`,
			`False/NotReady: EC2NodeClass "default" is not ready: no subnets match`, "True/ValidationSucceeded: "},
		{"node class without conditions", test.NodePool("p").Obj(), []client.Object{nodeClass("default", nil, "")},
			`Unknown/AwaitingReconciliation: NodeClassReady: EC2NodeClass "default" has no Ready condition yet`,
			`Unknown/AwaitingReconciliation: EC2NodeClass "default" has no Ready condition yet`, "True/ValidationSucceeded: "},
		{"restricted label", test.NodePool("p").Label("kubernetes.io/hostname", "x").Obj(), []client.Object{nodeClass("default", &yes, "")},
			`False/ValidationFailed: ValidationSucceeded: template labels: label "kubernetes.io/hostname" is restricted`,
			"True/NodeClassReady: ", `False/ValidationFailed: template labels: label "kubernetes.io/hostname" is restricted`},
		// The fake client runs no CEL: these stand for NodePools stored before a rule existed or kept by ratcheting.
		{"nodepool key in requirements", test.NodePool("p").Requirement(karpv1.NodePoolLabelKey, corev1.NodeSelectorOpIn, "other").Obj(),
			[]client.Object{nodeClass("default", &yes, "")},
			`False/ValidationFailed: ValidationSucceeded: requirements: label "karpenter.sh/nodepool" is set by Dovetail and may not be used in a NodePool`,
			"True/NodeClassReady: ", `False/ValidationFailed: requirements: label "karpenter.sh/nodepool" is set by Dovetail and may not be used in a NodePool`},
		{"restricted requirement domain", test.NodePool("p").Requirement("karpenter.k8s.aws/custom", corev1.NodeSelectorOpExists).Obj(),
			[]client.Object{nodeClass("default", &yes, "")},
			`False/ValidationFailed: ValidationSucceeded: requirements: label "karpenter.k8s.aws/custom" is restricted: keys in the "karpenter.k8s.aws" domain must be well-known labels`,
			"True/NodeClassReady: ", `False/ValidationFailed: requirements: label "karpenter.k8s.aws/custom" is restricted: keys in the "karpenter.k8s.aws" domain must be well-known labels`},
		{"invalid requirement key", test.NodePool("p").Requirement("team name", corev1.NodeSelectorOpExists).Obj(),
			[]client.Object{nodeClass("default", &yes, "")},
			`False/ValidationFailed: ValidationSucceeded: requirements: label key "team name" is not valid: ` + qualifiedNameError,
			"True/NodeClassReady: ", `False/ValidationFailed: requirements: label key "team name" is not valid: ` + qualifiedNameError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
			if err != nil {
				t.Fatal(err)
			}
			kube := clientfake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&karpv1.NodePool{}).
				WithObjects(append(tt.classes, tt.np)...).Build()
			c := NewController(deps.Deps{Client: kube})
			if _, err := c.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "p"}}); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			np := &karpv1.NodePool{}
			if err := kube.Get(context.Background(), client.ObjectKey{Name: "p"}, np); err != nil {
				t.Fatal(err)
			}
			got := [3]string{cond(np, karpv1.ConditionTypeReady), cond(np, karpv1.ConditionTypeNodeClassReady), cond(np, karpv1.ConditionTypeValidationSucceeded)}
			if diff := cmp.Diff([3]string{tt.want, tt.wantNCR, tt.wantVald}, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

// qualifiedNameError is what k8s.io/apimachinery says of a label key with a space.
var qualifiedNameError = strings.Join(validation.IsQualifiedName("team name"), "; ")

func cond(np *karpv1.NodePool, t string) string {
	c := np.GetCondition(t)
	if c == nil {
		return "<none>"
	}
	return fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message)
}

func TestRegistrationHealthStartsOver(t *testing.T) {
	yes := metav1.ConditionTrue
	scheme, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	np := test.NodePool("p").Obj()
	np.UID = "np-uid"
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&karpv1.NodePool{}).
		WithObjects(nodeClass("default", &yes, ""), np).Build()
	rh := deps.NewRegistrationHealth()
	c := NewController(deps.Deps{Client: kube, RegistrationHealth: rh})
	ctx := context.Background()
	reconcileAndGet := func() *karpv1.NodePool {
		t.Helper()
		if _, err := c.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "p"}}); err != nil {
			t.Fatal(err)
		}
		got := &karpv1.NodePool{}
		if err := kube.Get(ctx, client.ObjectKey{Name: "p"}, got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := reconcileAndGet()
	if cond := got.GetCondition(karpv1.ConditionTypeNodeRegistrationHealthy); cond == nil || cond.Status != metav1.ConditionUnknown || cond.Reason != "AwaitingReconciliation" {
		t.Fatalf("new nodepool: NodeRegistrationHealthy %+v, want Unknown/AwaitingReconciliation", cond)
	}
	// Registrations made it True; an unchanged NodePool keeps it.
	got.SetTrue(karpv1.ConditionTypeNodeRegistrationHealthy, karpv1.ReasonRegistrationHealthy)
	if err := kube.Status().Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	rh.Record(got.UID, true)
	if cond := reconcileAndGet().GetCondition(karpv1.ConditionTypeNodeRegistrationHealthy); cond.Status != metav1.ConditionTrue {
		t.Fatalf("unchanged nodepool: NodeRegistrationHealthy %+v, want True", cond)
	}
	// A restart: the record is empty, the condition seeds it.
	rh.Set(got.UID, deps.RegistrationUnknown)
	reconcileAndGet()
	if s := rh.Status(got.UID); s != deps.RegistrationHealthy {
		t.Errorf("after a restart: record %v, want Healthy from the condition", s)
	}
	// A change of the NodePool's spec starts over.
	got = reconcileAndGet()
	got.Spec.Weight = ptrTo(int32(5))
	got.Generation++
	if err := kube.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if cond := reconcileAndGet().GetCondition(karpv1.ConditionTypeNodeRegistrationHealthy); cond.Status != metav1.ConditionUnknown {
		t.Errorf("after a spec change: NodeRegistrationHealthy %+v, want Unknown", cond)
	}
	if s := rh.Status(got.UID); s != deps.RegistrationUnknown {
		t.Errorf("after a spec change: record %v, want Unknown", s)
	}
}

func ptrTo[T any](v T) *T { return &v }
