package v1_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

func TestNodeClaimReadyFollowsDependents(t *testing.T) {
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
	steps := []struct {
		name       string
		set        func()
		want       metav1.ConditionStatus
		wantReason string
	}{
		{name: "launched only", set: func() { nc.SetTrue(karpv1.ConditionTypeLaunched, karpv1.ReasonLaunched) },
			want: metav1.ConditionUnknown, wantReason: karpv1.ReasonUnknown},
		{name: "registration timed out", set: func() {
			nc.SetFalse(karpv1.ConditionTypeRegistered, karpv1.ReasonRegistrationTimeout, "no node after 15m")
		}, want: metav1.ConditionFalse, wantReason: karpv1.ReasonRegistrationTimeout},
		{name: "registered", set: func() { nc.SetTrue(karpv1.ConditionTypeRegistered, karpv1.ReasonRegistered) },
			want: metav1.ConditionUnknown, wantReason: karpv1.ReasonUnknown},
		{name: "initialized", set: func() { nc.SetTrue(karpv1.ConditionTypeInitialized, karpv1.ReasonInitialized) },
			want: metav1.ConditionTrue, wantReason: karpv1.ReasonReady},
		{name: "drift does not affect readiness", set: func() { nc.SetTrue(karpv1.ConditionTypeDrifted, karpv1.ReasonAMIDrift) },
			want: metav1.ConditionTrue, wantReason: karpv1.ReasonReady},
	}
	for _, s := range steps {
		s.set()
		ready := nc.GetCondition(karpv1.ConditionTypeReady)
		if ready == nil {
			t.Fatalf("%s: no Ready condition", s.name)
		}
		if ready.Status != s.want || ready.Reason != s.wantReason || ready.ObservedGeneration != 3 {
			t.Errorf("%s: Ready = %s/%s gen %d, want %s/%s gen 3", s.name, ready.Status, ready.Reason, ready.ObservedGeneration, s.want, s.wantReason)
		}
	}
	for _, c := range nc.StatusConditions() {
		if c.ObservedGeneration != 3 {
			t.Errorf("condition %s has observedGeneration %d, want 3", c.Type, c.ObservedGeneration)
		}
	}
}

func TestSetConditionReportsChange(t *testing.T) {
	np := &karpv1.NodePool{}
	if !np.SetTrue(karpv1.ConditionTypeValidationSucceeded, karpv1.ReasonValidationSucceeded) {
		t.Fatal("first SetTrue reported no change")
	}
	if np.SetTrue(karpv1.ConditionTypeValidationSucceeded, karpv1.ReasonValidationSucceeded) {
		t.Error("repeating SetTrue reported a change")
	}
	np.SetTrue(karpv1.ConditionTypeNodeClassReady, karpv1.ReasonNodeClassReady)
	if !np.IsTrue(karpv1.ConditionTypeReady) {
		t.Errorf("NodePool not Ready with all dependents true: %+v", np.Status.Conditions)
	}
}

func TestComputeReadyFalseCarriesMessage(t *testing.T) {
	conds := []metav1.Condition{
		{Type: "A", Status: metav1.ConditionTrue, Reason: "Ok"},
		{Type: "B", Status: metav1.ConditionFalse, Reason: "Broken", Message: "subnet missing"},
	}
	got := karpv1.ComputeReady(conds, 7, "A", "B")
	want := metav1.Condition{Type: karpv1.ConditionTypeReady, Status: metav1.ConditionFalse, Reason: "Broken", Message: "B: subnet missing", ObservedGeneration: 7}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(metav1.Condition{}, "LastTransitionTime")); diff != "" {
		t.Errorf("ComputeReady (-want +got):\n%s", diff)
	}
}
