package deps_test

import (
	"context"
	"encoding/json"
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

// startKarpenterEnv starts an API server with Karpenter's kinds for the test and returns its client.
func startKarpenterEnv(t *testing.T) client.Client {
	t.Helper()
	s, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	return test.StartEnv(t, s).Client
}

func condition(t, status, reason string, at time.Time) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, LastTransitionTime: metav1.NewTime(at)}
}

// TestNodeClaimStatusWritersDoNotConflict runs on a real API server: writers that each changed their own part of
// a NodeClaim from the same copy (the lifecycle its Registered condition and node name, the consistency check its
// condition, the disruption signals theirs, and a label written meanwhile) all succeed and keep each other's
// writes; a writer that changed a condition someone else changed since it read gets a Conflict.
func TestNodeClaimStatusWritersDoNotConflict(t *testing.T) {
	ctx := context.Background()
	kube := startKarpenterEnv(t)
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
	err := write(func(n *karpv1.NodeClaim) {
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

// TestNodeClaimStatusPatchFirst: a first status is set whole after a test that none is stored, a first condition
// list after a test that none is stored; nothing changed, nothing is written.
func TestNodeClaimStatusPatchFirst(t *testing.T) {
	now := time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)
	empty := test.NodeClaim("a", "default").Obj()
	launched := empty.DeepCopy()
	launched.Status.ProviderID = "aws:///z/i-1"
	launched.Status.Conditions = []metav1.Condition{condition(karpv1.ConditionTypeLaunched, "True", "Launched", now)}
	noConds := empty.DeepCopy()
	noConds.Status.ProviderID = "aws:///z/i-1"
	for _, tc := range []struct {
		name       string
		stored, nc *karpv1.NodeClaim
		wantFirst  bool
		wantOps    []string
	}{
		{"first status", empty, launched, true, []string{"test /status", "add /status"}},
		{"first conditions", noConds, launched, false, []string{"test /status/conditions", "add /status/conditions"}},
		{"unchanged", launched, launched.DeepCopy(), false, nil},
		{"nothing either", empty, empty.DeepCopy(), false, nil},
	} {
		p, first, err := deps.NodeClaimStatusPatch(tc.stored, tc.nc)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var ops []struct{ Op, Path string }
		if p != nil {
			if err := json.Unmarshal(p, &ops); err != nil {
				t.Fatalf("%s: decoding %s: %v", tc.name, p, err)
			}
		}
		var got []string
		for _, o := range ops {
			got = append(got, o.Op+" "+o.Path)
		}
		if first != tc.wantFirst {
			t.Errorf("%s: first %v, want %v", tc.name, first, tc.wantFirst)
		}
		if diff := cmp.Diff(tc.wantOps, got); diff != "" {
			t.Errorf("%s: patch %s (-want +got ops):\n%s", tc.name, p, diff)
		}
	}
}

// TestFirstStatusWritesWithoutLock runs on a real API server: the first status of a NodeClaim and its first
// condition list land from a copy whose resourceVersion is stale (an annotation written since, as the node class
// hash stamp does), and fail as a Conflict when a status or a list was written since instead of replacing it.
func TestFirstStatusWritesWithoutLock(t *testing.T) {
	ctx := context.Background()
	kube := startKarpenterEnv(t)
	now := time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)
	launched := func(n *karpv1.NodeClaim) {
		n.Status.ProviderID = "aws:///us-west-2a/i-1"
		n.Status.Conditions = []metav1.Condition{condition(karpv1.ConditionTypeLaunched, "True", "Launched", now)}
	}
	create := func(name string) *karpv1.NodeClaim {
		nc := test.NodeClaim(name, "default").Obj()
		if err := kube.Create(ctx, nc); err != nil {
			t.Fatal(err)
		}
		return nc.DeepCopy()
	}
	annotate := func(read *karpv1.NodeClaim) {
		n := read.DeepCopy()
		n.Annotations = map[string]string{"karpenter.k8s.aws/ec2nodeclass-hash": "1"}
		if err := kube.Patch(ctx, n, client.MergeFrom(read)); err != nil {
			t.Fatal(err)
		}
	}
	get := func(name string) *karpv1.NodeClaim {
		n := &karpv1.NodeClaim{}
		if err := kube.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// An annotation since the read: the first status lands all the same, and keeps the annotation.
	read := create("stale-rv")
	annotate(read)
	mine := read.DeepCopy()
	launched(mine)
	if err := deps.PatchNodeClaimStatus(ctx, kube, read, mine); err != nil {
		t.Errorf("first status from a copy behind an annotation: %v", err)
	}
	if got := get("stale-rv"); got.Status.ProviderID != "aws:///us-west-2a/i-1" || len(got.Status.Conditions) != 1 ||
		got.Annotations["karpenter.k8s.aws/ec2nodeclass-hash"] != "1" {
		t.Errorf("after the first status: provider ID %q, conditions %v, annotations %v", got.Status.ProviderID,
			got.Status.Conditions, got.Annotations)
	}

	// A status written since the read: the first status from the old copy is refused, not laid over it.
	read = create("raced")
	other := read.DeepCopy()
	other.Status.Conditions = []metav1.Condition{condition(karpv1.ConditionTypeDrifted, "True", "AMIDrift", now)}
	if err := kube.Status().Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	mine = read.DeepCopy()
	launched(mine)
	if err := deps.PatchNodeClaimStatus(ctx, kube, read, mine); !apierrors.IsConflict(err) {
		t.Errorf("first status over one written since: got %v, want a conflict", err)
	}
	if got := get("raced"); len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != karpv1.ConditionTypeDrifted {
		t.Errorf("conditions after the refused write: %v, want Drifted only", got.Status.Conditions)
	}

	// A status without conditions: the first list lands from a stale copy, and is refused over one made since.
	read = create("no-list")
	read.Status.ProviderID = "aws:///us-west-2a/i-2"
	if err := kube.Status().Update(ctx, read); err != nil {
		t.Fatal(err)
	}
	base := read.DeepCopy()
	annotate(base)
	mine = base.DeepCopy()
	mine.Status.Conditions = []metav1.Condition{condition(karpv1.ConditionTypeLaunched, "True", "Launched", now)}
	if err := deps.PatchNodeClaimStatus(ctx, kube, base, mine); err != nil {
		t.Errorf("first condition list from a copy behind an annotation: %v", err)
	}
	mine = base.DeepCopy()
	mine.Status.Conditions = []metav1.Condition{condition(karpv1.ConditionTypeRegistered, "True", "Registered", now)}
	if err := deps.PatchNodeClaimStatus(ctx, kube, base, mine); !apierrors.IsConflict(err) {
		t.Errorf("first condition list over one made since: got %v, want a conflict", err)
	}
	if got := get("no-list"); len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Type != karpv1.ConditionTypeLaunched ||
		got.Status.ProviderID != "aws:///us-west-2a/i-2" {
		t.Errorf("after the list writes: provider ID %q, conditions %v", got.Status.ProviderID, got.Status.Conditions)
	}
}

// TestKeepOnlyConditions: the conditions are the stored ones with only the named ones taken from the changed copy.
func TestKeepOnlyConditions(t *testing.T) {
	now := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	ready := func(gen int64) metav1.Condition {
		c := condition(karpv1.ConditionTypeReady, "True", "Ready", now)
		c.ObservedGeneration = gen
		return c
	}
	drained := condition("Drained", "False", "Draining", now)
	drainedNow := condition("Drained", "True", "Drained", now.Add(time.Minute))
	other := condition(karpv1.ConditionTypeConsistentStateFound, "True", "ConsistentStateFound", now)
	volumes := condition("VolumesDetached", "True", "VolumesDetached", now.Add(time.Minute))
	otherNow := condition(karpv1.ConditionTypeConsistentStateFound, "False", "ConsistencyCheckFailed", now.Add(time.Minute))
	for _, tc := range []struct {
		name           string
		types          []string
		stored, change []metav1.Condition
		want           []metav1.Condition
	}{
		{"appended, restamp of Ready left out", []string{"Drained"}, []metav1.Condition{ready(1)}, []metav1.Condition{ready(2), drained}, []metav1.Condition{ready(1), drained}},
		{"changed in place", []string{"Drained"}, []metav1.Condition{drained, ready(1)}, []metav1.Condition{drainedNow, ready(2)}, []metav1.Condition{drainedNow, ready(1)}},
		{"removed", []string{"Drained"}, []metav1.Condition{ready(1), drained, other}, []metav1.Condition{ready(2), other}, []metav1.Condition{ready(1), other}},
		{"absent from both", []string{"Drained"}, []metav1.Condition{ready(1)}, []metav1.Condition{ready(2)}, []metav1.Condition{ready(1)}},
		{"two changed, one appended, another writer's change left out", []string{"Drained", "VolumesDetached"},
			[]metav1.Condition{drained, ready(1), other}, []metav1.Condition{drainedNow, ready(2), otherNow, volumes},
			[]metav1.Condition{drainedNow, ready(1), other, volumes}},
		{"none named", nil, []metav1.Condition{drained, ready(1)}, []metav1.Condition{drainedNow, ready(2)}, []metav1.Condition{drained, ready(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := test.NodeClaim("a", "default").Obj()
			stored.Status.Conditions = slices.Clone(tc.stored)
			nc := stored.DeepCopy()
			nc.Status.Conditions = slices.Clone(tc.change)
			deps.KeepOnlyConditions(stored, nc, tc.types...)
			if diff := cmp.Diff(tc.want, nc.Status.Conditions); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.stored, stored.Status.Conditions); diff != "" {
				t.Errorf("stored copy changed (-was +now):\n%s", diff)
			}
		})
	}
}

// TestConditionWriteAfterDeletionRestamp runs on a real API server: the deletion of a NodeClaim bumps its
// generation, and the first writer of a condition after it restamps the root Ready condition too. A second writer
// of another condition, from the copy read before, lands when it sends its condition alone (KeepOnlyConditions);
// sending its own restamp of Ready, it is refused, since Ready is no longer as that copy had it.
func TestConditionWriteAfterDeletionRestamp(t *testing.T) {
	ctx := context.Background()
	kube := startKarpenterEnv(t)
	nc := test.NodeClaim("restamped", "default").Obj()
	nc.Finalizers = []string{karpv1.TerminationFinalizer}
	if err := kube.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{karpv1.ConditionTypeLaunched, karpv1.ConditionTypeRegistered, karpv1.ConditionTypeInitialized} {
		nc.SetTrue(c, c)
	}
	if err := kube.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	if err := kube.Delete(ctx, nc); err != nil {
		t.Fatal(err)
	}
	read := &karpv1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), read); err != nil {
		t.Fatal(err)
	}
	if read.Generation == nc.Generation || read.GetCondition(karpv1.ConditionTypeReady).ObservedGeneration == read.Generation {
		t.Fatalf("generation %d, Ready observed at %d: the deletion did not leave Ready to restamp", read.Generation,
			read.GetCondition(karpv1.ConditionTypeReady).ObservedGeneration)
	}
	write := func(cond string, only bool) error {
		stored, mine := read.DeepCopy(), read.DeepCopy()
		if !mine.SetCondition(cond, metav1.ConditionTrue, cond, "") {
			t.Fatalf("%s: nothing changed", cond)
		}
		if only {
			deps.KeepOnlyConditions(stored, mine, cond)
		}
		return deps.PatchNodeClaimStatus(ctx, kube, stored, mine)
	}
	if err := write("InstanceTerminating", false); err != nil {
		t.Fatalf("first writer, restamping Ready: %v", err)
	}
	if err := write("Drained", true); err != nil {
		t.Errorf("second writer sending its condition alone: %v", err)
	}
	// The test above can fail: with its restamp of Ready the same write is refused.
	if err := write(karpv1.ConditionTypeDisruptionReason, false); !apierrors.IsConflict(err) {
		t.Errorf("a writer restamping Ready after the first writer did: got %v, want a conflict", err)
	}
	got := &karpv1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatal(err)
	}
	if got.GetCondition("Drained") == nil || got.GetCondition("InstanceTerminating") == nil {
		t.Errorf("conditions %v: want both writers' conditions kept", got.Status.Conditions)
	}
}
