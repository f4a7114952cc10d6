package capacitybuffer_test

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/log"

	autoscalingv1beta1 "github.com/dovetail/dovetail/api/autoscaling/v1beta1"
	"github.com/dovetail/dovetail/pkg/controllers/capacitybuffer"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestDisabledNotice: with the gate off, existing buffers are named in one log line; none, no line.
func TestDisabledNotice(t *testing.T) {
	scheme, err := test.NewScheme(autoscalingv1beta1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		buffers []client.Object
		want    int
	}{
		{name: "none", want: 0},
		{name: "two", buffers: []client.Object{test.CapacityBuffer("a", "one").Replicas(1).Obj(), test.CapacityBuffer("b", "two").Replicas(1).Obj()}, want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lines []string
			ctx := log.IntoContext(context.Background(), funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{}))
			r := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.buffers...).Build()
			got := capacitybuffer.NewDisabledNotice(deps.Deps{}).Check(ctx, r)
			if got != tc.want {
				t.Errorf("Check = %d, want %d", got, tc.want)
			}
			wantLines := 0
			if tc.want > 0 {
				wantLines = 1
			}
			if len(lines) != wantLines || (wantLines == 1 && !strings.Contains(lines[0], "CapacityBuffer feature gate is off")) {
				t.Errorf("log lines %q, want %d naming the gate", lines, wantLines)
			}
		})
	}
}
