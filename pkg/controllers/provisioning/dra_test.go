package provisioning

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestPodsWithDRAClaimsAreNotProvisionedFor: with IGNORE_DRA_REQUESTS=true, a pending pod with resource claims
// (its own or a container's) gets no NodeClaim but a FailedScheduling event saying why; a pod without claims in
// the same pass is provisioned for.
func TestPodsWithDRAClaimsAreNotProvisionedFor(t *testing.T) {
	tests := []struct {
		name  string
		claim func(p *corev1.Pod)
	}{
		{"pod resource claim", func(p *corev1.Pod) {
			name := "gpu-template"
			p.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &name}}
		}},
		{"container claim", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			scheme, err := test.NewScheme(karpv1.AddToScheme)
			if err != nil {
				t.Fatal(err)
			}
			dra := test.Pod("dra").Requests("1", "1Gi").Unschedulable().Obj()
			tt.claim(dra)
			for _, only := range []bool{true, false} {
				objs := []corev1.Pod{*dra.DeepCopy()}
				if !only {
					objs = append(objs, *test.Pod("web").Requests("1", "1Gi").Unschedulable().Obj())
				}
				b := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(test.NodePool("default").Obj())
				for i := range objs {
					b = b.WithObjects(&objs[i])
				}
				api := b.Build()
				c, _ := newTestController(api)
				if err := c.Schedule(ctx); err != nil {
					t.Fatal(err)
				}
				list := &karpv1.NodeClaimList{}
				if err := api.List(ctx, list); err != nil {
					t.Fatal(err)
				}
				want := 0
				if !only {
					want = 1
				}
				if len(list.Items) != want {
					t.Errorf("only the DRA pod %v: %d nodeclaims, want %d", only, len(list.Items), want)
				}
				events := drain(c.deps.Recorder.(*record.FakeRecorder))
				found := false
				for _, e := range events {
					if strings.Contains(e, "FailedScheduling") && strings.Contains(e, ReasonDRARequests) {
						found = true
					}
				}
				if !found {
					t.Errorf("only the DRA pod %v: no FailedScheduling event naming the DRA claims among %q", only, events)
				}
				if got := testutil.ToFloat64(c.deps.Metrics.SchedulerIgnoredPods); got != 1 {
					t.Errorf("only the DRA pod %v: karpenter_scheduler_ignored_pods_count = %v, want 1", only, got)
				}
			}
		})
	}
}

func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
