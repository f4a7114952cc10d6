package scheduling_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestRescheduled: the pod that takes a bound pod's place is unbound and keeps only the claims it names; the bound
// pod, whose maps and slices the copy shares, is left exactly as it was.
func TestRescheduled(t *testing.T) {
	p := test.SchedPod("web").Labels("app", "web").Requests("1", "1Gi").Obj()
	p.Spec.NodeName = "node-1"
	p.Spec.ResourceClaims = []corev1.PodResourceClaim{
		{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu-template")},
		{Name: "shared", ResourceClaimName: ptr.To("shared-claim")},
	}
	p.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{
		{Name: "gpu", ResourceClaimName: ptr.To("web-gpu-x7k2")},
		{Name: "shared", ResourceClaimName: ptr.To("shared-claim")},
	}
	before := p.DeepCopy()
	got := scheduling.Rescheduled(p)
	if got.Spec.NodeName != "" {
		t.Errorf("rescheduled pod bound to %q, want unbound", got.Spec.NodeName)
	}
	if want := []corev1.PodResourceClaimStatus{{Name: "shared", ResourceClaimName: ptr.To("shared-claim")}}; !cmp.Equal(got.Status.ResourceClaimStatuses, want) {
		t.Errorf("claim statuses %v, want only the named claim's", got.Status.ResourceClaimStatuses)
	}
	if got.Labels["app"] != "web" || len(got.Spec.Containers) != 1 {
		t.Errorf("rescheduled pod lost its labels or containers: %+v", got)
	}
	if d := cmp.Diff(before, p); d != "" {
		t.Errorf("the bound pod changed (-before +after):\n%s", d)
	}
}
