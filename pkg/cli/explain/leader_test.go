package explain

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/dovetail/dovetail/pkg/leaderlease"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestExplainPodNotLeading: a pending pod's explanation says first that Dovetail is not leading while another
// autoscaler renews a leader Lease of the controller's name, and nothing about leases otherwise.
func TestExplainPodNotLeading(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	const karpenter = "karpenter-7d9c5b6f4-abcde_0b1e4c1a"
	lease := func(ns, holder string, renewedAgo time.Duration) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: leaderlease.DefaultName},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
				RenewTime: &metav1.MicroTime{Time: now.Add(-renewedAgo)}}}
	}
	for _, tc := range []struct {
		name    string
		lease   *coordinationv1.Lease
		want    string
		wantNot bool
	}{
		{"Karpenter renews the shared lease", lease("kube-system", karpenter, 2*time.Second),
			"Dovetail is not leading: Karpenter holds the leader lease kube-system/karpenter-leader-election (holder " + karpenter + ", renewed 2s ago); Dovetail neither provisions nor disrupts until it lapses", false},
		{"Karpenter in another namespace", lease("karpenter", karpenter, time.Second),
			"(holder " + karpenter + ", renewed 1s ago, in another namespace than the controller's kube-system)", false},
		{"the lease lapsed", lease("kube-system", karpenter, time.Minute), "Dovetail is not leading", true},
		{"Dovetail leads", lease("kube-system", leaderlease.Identity("dovetail-1", "2"), time.Second), "Dovetail is not leading", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := test.Pod("web").Requests("1", "1Gi").Unschedulable().Obj()
			c := fakeClient(t, test.NodePool("general").Obj(), pod, tc.lease)
			var out bytes.Buffer
			o := &Options{Output: "table", Region: "us-west-2", Clock: clocktesting.NewFakePassiveClock(now)}
			if err := RunPod(context.Background(), c, o, types.NamespacedName{Namespace: "default", Name: "web"}, &out); err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(out.String(), tc.want); got == tc.wantNot {
				t.Errorf("output contains %q: %v, want %v:\n%s", tc.want, got, !tc.wantNot, out.String())
			}
		})
	}
}
