package lifecycle

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// TestNotInitializedWaitsOnlyForRequestedExtendedResources: an extended resource the instance type offers (EFA,
// Windows addresses) but no pod requested does not hold initialization back; a requested one does until the node
// registers it.
func TestNotInitializedWaitsOnlyForRequestedExtendedResources(t *testing.T) {
	node := func(allocatable corev1.ResourceList) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Allocatable: allocatable,
		}}
	}
	claim := func(requests corev1.ResourceList) *karpv1.NodeClaim {
		nc := &karpv1.NodeClaim{}
		nc.Spec.Resources.Requests = requests
		nc.Status.Allocatable = corev1.ResourceList{"vpc.amazonaws.com/efa": resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("2")}
		return nc
	}
	for _, tc := range []struct {
		name       string
		requests   corev1.ResourceList
		registered corev1.ResourceList
		wantReason string
	}{
		{"offered, not requested, not registered", nil, corev1.ResourceList{}, ""},
		{"requested, not registered", corev1.ResourceList{"vpc.amazonaws.com/efa": resource.MustParse("1")}, corev1.ResourceList{},
			karpv1.ReasonResourcesNotReady},
		{"requested and registered", corev1.ResourceList{"vpc.amazonaws.com/efa": resource.MustParse("1")},
			corev1.ResourceList{"vpc.amazonaws.com/efa": resource.MustParse("1")}, ""},
	} {
		if reason, msg := NotInitialized(claim(tc.requests), node(tc.registered)); reason != tc.wantReason {
			t.Errorf("%s: NotInitialized = %q (%s), want %q", tc.name, reason, msg, tc.wantReason)
		}
	}
}
