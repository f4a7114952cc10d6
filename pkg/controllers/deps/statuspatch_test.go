package deps_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/test"
)

func condition(t, status, reason string, at time.Time) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, LastTransitionTime: metav1.NewTime(at)}
}

// TestNodeClaimStatusWritersDoNotConflict runs on a real API server: writers that each changed their own part of
// a NodeClaim from the same copy (the lifecycle its Registered condition and node name, the consistency check its
// condition, the disruption signals theirs, and a label written meanwhile) all succeed and keep each other's
// writes; a writer that changed a condition someone else changed since it read gets a Conflict.
func TestNodeClaimStatusWritersDoNotConflict(t *testing.T) {
	ctx := context.Background()
	s, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	env := test.StartEnv(t, s)
	kube := env.Client
	now := time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)

	nc := test.NodeClaim("a", "default").Obj()
	if err := kube.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc.Status.ProviderID = "aws:///us-west-2a/i-1"
	nc.Status.Conditions = []metav1.Condition{condition(karpv1.ConditionTypeLaunched, "True", "Launched", now),
		condition(karpv1.ConditionTypeRegistered, "Unknown", "AwaitingReconciliation", now)}
	if err := kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	read := &karpv1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), read); err != nil {
		t.Fatal(err)
	}

	write := func(change func(*karpv1.NodeClaim)) error {
		stored := read.DeepCopy()
		mine := read.DeepCopy()
		change(mine)
		return deps.PatchNodeClaimStatus(ctx, kube, stored, mine)
	}
	later := now.Add(time.Minute)
	// A label first: the copy's resourceVersion is stale for all that follow.
	labelled := read.DeepCopy()
	labelled.Labels["team"] = "a"
	if err := kube.Patch(ctx, labelled, client.MergeFrom(read)); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*karpv1.NodeClaim){
		"registration": func(n *karpv1.NodeClaim) {
			meta.SetStatusCondition(&n.Status.Conditions, condition(karpv1.ConditionTypeRegistered, "True", "Registered", later))
			n.Status.NodeName = "node-a"
		},
		"consistency": func(n *karpv1.NodeClaim) {
			meta.SetStatusCondition(&n.Status.Conditions, condition(karpv1.ConditionTypeConsistentStateFound, "True", "ConsistentStateFound", later))
		},
		"drift": func(n *karpv1.NodeClaim) {
			meta.SetStatusCondition(&n.Status.Conditions, condition(karpv1.ConditionTypeDrifted, "True", "AMIDrift", later))
		},
	} {
		if err := write(change); err != nil {
			t.Errorf("%s from a stale copy: %v", name, err)
		}
	}
	// Registered changed since read: a second writer of it from the old copy must not overwrite it.
	err = write(func(n *karpv1.NodeClaim) {
		meta.SetStatusCondition(&n.Status.Conditions, condition(karpv1.ConditionTypeRegistered, "False", "RegistrationFailed", later))
	})
	if !apierrors.IsConflict(err) {
		t.Errorf("changing a condition changed meanwhile: got %v, want a conflict", err)
	}
	// Drifted was appended since read: appending it again from the old copy is refused as stale too.
	err = write(func(n *karpv1.NodeClaim) {
		meta.SetStatusCondition(&n.Status.Conditions, condition(karpv1.ConditionTypeDrifted, "False", "NotDrifted", later))
	})
	if !apierrors.IsConflict(err) {
		t.Errorf("appending a condition appended meanwhile: got %v, want a conflict", err)
	}
	// Dropping a condition from a stale copy works when it is still as read.
	if err := write(func(n *karpv1.NodeClaim) {
		meta.RemoveStatusCondition(&n.Status.Conditions, karpv1.ConditionTypeLaunched)
	}); err != nil {
		t.Errorf("removing Launched: %v", err)
	}

	got := &karpv1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatal(err)
	}
	type cond struct{ Type, Status, Reason string }
	var conds []cond
	for _, c := range got.Status.Conditions {
		conds = append(conds, cond{c.Type, string(c.Status), c.Reason})
	}
	want := []cond{{karpv1.ConditionTypeRegistered, "True", "Registered"},
		{karpv1.ConditionTypeConsistentStateFound, "True", "ConsistentStateFound"}, {karpv1.ConditionTypeDrifted, "True", "AMIDrift"}}
	// The appended conditions come in the order the writers ran (a map's): compare sorted.
	byType := func(a, b cond) int { return strings.Compare(a.Type, b.Type) }
	slices.SortFunc(want, byType)
	slices.SortFunc(conds, byType)
	if diff := cmp.Diff(want, conds); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if got.Status.NodeName != "node-a" || got.Status.ProviderID != "aws:///us-west-2a/i-1" || got.Labels["team"] != "a" {
		t.Errorf("node name %q, provider ID %q, label %q: want every write kept", got.Status.NodeName, got.Status.ProviderID, got.Labels["team"])
	}
}

// TestNodeClaimStatusPatchFallsBack: with no conditions stored, the patch cannot append to a list that may have
// been made meanwhile, and the caller writes with a lock; nothing changed, nothing is written.
func TestNodeClaimStatusPatchFallsBack(t *testing.T) {
	now := time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)
	empty := test.NodeClaim("a", "default").Obj()
	launched := empty.DeepCopy()
	launched.Status.ProviderID = "aws:///z/i-1"
	launched.Status.Conditions = []metav1.Condition{condition(karpv1.ConditionTypeLaunched, "True", "Launched", now)}
	for _, tc := range []struct {
		name          string
		stored, nc    *karpv1.NodeClaim
		wantOK, wantP bool
	}{
		{"first status", empty, launched, false, false},
		{"unchanged", launched, launched.DeepCopy(), true, false},
	} {
		p, ok, err := deps.NodeClaimStatusPatch(tc.stored, tc.nc)
		if err != nil || ok != tc.wantOK || (p != nil) != tc.wantP {
			t.Errorf("%s: patch %s, ok %v, err %v; want ok %v, patch %v", tc.name, p, ok, err, tc.wantOK, tc.wantP)
		}
	}
}
