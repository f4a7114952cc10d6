package deps_test

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestForCountsRefusedWritesByController writes with a stale copy (optimistic lock) through two controllers'
// clients and checks that each conflict is counted under the controller that made it, with its verb and kind,
// and that writes which succeed or fail otherwise are not counted as conflicts; every write counts as sent.
func TestForCountsRefusedWritesByController(t *testing.T) {
	ctx := context.Background()
	s, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	nc := test.NodeClaim("a", "default").Obj()
	invalid := errors.New("refused")
	base := fake.NewClientBuilder().WithScheme(s).WithObjects(nc).WithStatusSubresource(&karpv1.NodeClaim{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				invalid = apierrors.NewInvalid(schema.GroupKind{Group: "karpenter.sh", Kind: "NodeClaim"}, obj.GetName(),
					field.ErrorList{field.Invalid(field.NewPath("spec"), "x", "bad")})
				return invalid
			},
		}).Build()
	m := metrics.NewForTest()
	d := deps.Deps{Client: base, Metrics: m}
	life, term := d.For("nodeclaim.lifecycle").Client, d.For("nodeclaim.termination").Client

	stale := &karpv1.NodeClaim{}
	if err := base.Get(ctx, client.ObjectKeyFromObject(nc), stale); err != nil {
		t.Fatal(err)
	}
	fresh := stale.DeepCopy()
	fresh.Labels = map[string]string{"a": "b"}
	if err := life.Patch(ctx, fresh, client.MergeFromWithOptions(stale, client.MergeFromWithOptimisticLock{})); err != nil {
		t.Fatalf("first patch: %v", err)
	}
	// The same stale copy again: the object moved on.
	again := stale.DeepCopy()
	again.Labels = map[string]string{"c": "d"}
	if err := life.Patch(ctx, again, client.MergeFromWithOptions(stale, client.MergeFromWithOptimisticLock{})); !apierrors.IsConflict(err) {
		t.Fatalf("stale patch: got %v, want a conflict", err)
	}
	st := stale.DeepCopy()
	st.Status.ProviderID = "aws:///z/i-1"
	if err := term.Status().Patch(ctx, st, client.MergeFromWithOptions(stale, client.MergeFromWithOptimisticLock{})); !apierrors.IsConflict(err) {
		t.Fatalf("stale status patch: got %v, want a conflict", err)
	}
	if err := term.Update(ctx, stale.DeepCopy()); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: got %v, want a conflict", err)
	}
	if err := term.Delete(ctx, fresh); !apierrors.IsInvalid(err) {
		t.Fatalf("delete: got %v, want the injected 422", err)
	}

	if got := testutil.CollectAndCount(m.APIWriteConflicts); got != 3 {
		t.Errorf("conflict series: %d, want 3", got)
	}
	for _, c := range []struct {
		name                   string
		controller, verb, kind string
		want                   float64
		counter                func(...string) float64
	}{
		{"lifecycle patch conflict", "nodeclaim.lifecycle", "patch", "NodeClaim", 1, conflicts(m)},
		{"termination status patch conflict", "nodeclaim.termination", "status/patch", "NodeClaim", 1, conflicts(m)},
		{"termination update conflict", "nodeclaim.termination", "update", "NodeClaim", 1, conflicts(m)},
		{"lifecycle status patch: none", "nodeclaim.lifecycle", "status/patch", "NodeClaim", 0, conflicts(m)},
		{"termination delete invalid", "nodeclaim.termination", "delete", "NodeClaim", 1, invalids(m)},
		{"lifecycle delete invalid: none", "nodeclaim.lifecycle", "delete", "NodeClaim", 0, invalids(m)},
		{"lifecycle patches sent (one refused)", "nodeclaim.lifecycle", "patch", "NodeClaim", 2, writes(m)},
		{"termination status patch sent", "nodeclaim.termination", "status/patch", "NodeClaim", 1, writes(m)},
		{"termination update sent", "nodeclaim.termination", "update", "NodeClaim", 1, writes(m)},
		{"termination delete sent", "nodeclaim.termination", "delete", "NodeClaim", 1, writes(m)},
		{"lifecycle status patch: none sent", "nodeclaim.lifecycle", "status/patch", "NodeClaim", 0, writes(m)},
	} {
		if got := c.counter(c.controller, c.verb, c.kind); got != c.want {
			t.Errorf("%s: counted %v, want %v", c.name, got, c.want)
		}
	}
}

func conflicts(m *metrics.Metrics) func(...string) float64 {
	return func(l ...string) float64 { return testutil.ToFloat64(m.APIWriteConflicts.WithLabelValues(l...)) }
}

func writes(m *metrics.Metrics) func(...string) float64 {
	return func(l ...string) float64 { return testutil.ToFloat64(m.APIWrites.WithLabelValues(l...)) }
}

func invalids(m *metrics.Metrics) func(...string) float64 {
	return func(l ...string) float64 { return testutil.ToFloat64(m.APIWriteInvalid.WithLabelValues(l...)) }
}

// TestForWithoutMetrics keeps the client as it is when there are no metrics to count into.
func TestForWithoutMetrics(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	if got := (deps.Deps{Client: c}).For("x").Client; got != c {
		t.Errorf("client wrapped without metrics")
	}
}
