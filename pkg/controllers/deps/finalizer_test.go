package deps_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestRemoveFinalizerPatch(t *testing.T) {
	for _, tc := range []struct {
		name       string
		finalizers []string
		want       string
	}{
		{"absent", []string{"other"}, ""},
		{"none", nil, ""},
		{"only", []string{karpv1.TerminationFinalizer},
			`[{"op":"test","path":"/metadata/finalizers/0","value":"karpenter.sh/termination"},{"op":"remove","path":"/metadata/finalizers/0"}]`},
		{"second", []string{"other", karpv1.TerminationFinalizer},
			`[{"op":"test","path":"/metadata/finalizers/1","value":"karpenter.sh/termination"},{"op":"remove","path":"/metadata/finalizers/1"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc := test.NodeClaim("a", "default").Obj()
			nc.Finalizers = tc.finalizers
			got, err := deps.RemoveFinalizerPatch(nc, karpv1.TerminationFinalizer)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRemoveFinalizerDespiteOtherWrites runs on a real API server: the finalizer is removed with a copy read
// before a status write and a label change (which an optimistic lock would have refused), and a copy read before
// the list itself changed in front of the entry is refused as a conflict.
func TestRemoveFinalizerDespiteOtherWrites(t *testing.T) {
	ctx := context.Background()
	s, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	nc := test.NodeClaim("a", "default").Obj()
	nc.Finalizers = []string{"first", karpv1.TerminationFinalizer}
	c := test.StartEnv(t, s).Client
	if err := c.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, name := range []string{"a", "b"} {
			_ = c.Patch(ctx, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		}
	})
	gr := schema.GroupResource{Group: karpv1.Group, Resource: "nodeclaims"}

	stale := &karpv1.NodeClaim{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(nc), stale); err != nil {
		t.Fatal(err)
	}
	other := stale.DeepCopy()
	other.Labels = map[string]string{"x": "y"}
	if err := c.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	other.Status.ProviderID = "aws:///us-west-2a/i-1"
	if err := c.Status().Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := deps.RemoveFinalizer(ctx, c, stale.DeepCopy(), karpv1.TerminationFinalizer, gr); err != nil {
		t.Fatalf("removing with a copy older than a label change: %v", err)
	}
	got := &karpv1.NodeClaim{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(nc), got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"first"}, got.Finalizers); diff != "" {
		t.Errorf("finalizers (-want +got):\n%s", diff)
	}
	if got.Labels["x"] != "y" {
		t.Errorf("the label written meanwhile was lost: %v", got.Labels)
	}

	// The list changed in front of the entry: the copy's index is wrong, and the write is refused.
	moved := test.NodeClaim("b", "default").Obj()
	moved.Finalizers = []string{"first", karpv1.TerminationFinalizer}
	if err := c.Create(ctx, moved); err != nil {
		t.Fatal(err)
	}
	old := moved.DeepCopy()
	moved.Finalizers = []string{karpv1.TerminationFinalizer}
	if err := c.Update(ctx, moved); err != nil {
		t.Fatal(err)
	}
	err = deps.RemoveFinalizer(ctx, c, old, karpv1.TerminationFinalizer, gr)
	if !apierrors.IsConflict(err) {
		t.Fatalf("removing with a copy whose list moved: got %v, want a conflict", err)
	}
}
