package deps

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestConflictBackoff(t *testing.T) {
	b := NewConflictBackoff()
	var got []time.Duration
	for range 8 {
		got = append(got, b.Conflict("a"))
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 5 * time.Second, 5 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("waits for conflicts in a row (-want +got):\n%s", diff)
	}
	if d := b.Conflict("b"); d != 100*time.Millisecond {
		t.Errorf("another object's first conflict waits %v, want 100ms", d)
	}
	b.Done("a")
	if d := b.Conflict("a"); d != 100*time.Millisecond {
		t.Errorf("first conflict after a clean pass waits %v, want 100ms", d)
	}
}

func TestRequeueOnConflict(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "n1", errors.New("changed"))
	other := errors.New("boom")
	for _, tc := range []struct {
		name    string
		res     reconcile.Result
		err     error
		wantRes reconcile.Result
		wantErr error
	}{
		{name: "conflict", err: conflict, wantRes: reconcile.Result{RequeueAfter: time.Second}},
		{name: "other error", res: reconcile.Result{RequeueAfter: time.Minute}, err: other, wantRes: reconcile.Result{RequeueAfter: time.Minute}, wantErr: other},
		{name: "success", res: reconcile.Result{RequeueAfter: time.Minute}, wantRes: reconcile.Result{RequeueAfter: time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := RequeueOnConflict(context.Background(), time.Second, tc.res, tc.err)
			if res != tc.wantRes || !errors.Is(err, tc.wantErr) {
				t.Errorf("RequeueOnConflict = %+v, %v; want %+v, %v", res, err, tc.wantRes, tc.wantErr)
			}
		})
	}
}
