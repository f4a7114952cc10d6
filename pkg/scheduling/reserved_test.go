package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestReservedOfferings: a reserved offering (priced near zero, as the AWS provider prices reservations) wins
// over on-demand in the plan; a pool that does not allow reserved, or an unavailable (full) reservation, gets
// on-demand.
func TestReservedOfferings(t *testing.T) {
	types := func(avail bool) []*cloudprovider.InstanceType {
		b := test.SchedInstanceType("s.large", "2", "8Gi").Zones(0.10, "a", "b")
		if avail {
			b = b.Offering("b", cloudprovider.CapacityTypeReserved, 0.10/1e7)
		} else {
			b = b.Unavailable("b", cloudprovider.CapacityTypeReserved, 0.10/1e7)
		}
		return []*cloudprovider.InstanceType{b.Obj()}
	}
	pod := func() []*corev1.Pod { return []*corev1.Pod{test.Pod("p").Requests("1", "1Gi").Obj()} }
	any := test.SchedNodePool("default").Requirement(ctKey, corev1.NodeSelectorOpIn, "reserved", "on-demand").Obj()
	odOnly := test.SchedNodePool("default").Requirement(ctKey, corev1.NodeSelectorOpIn, "on-demand").Obj()
	for _, tc := range []tcase{
		{name: "reserved first", pools: []*scheduling.NodePool{any}, types: map[string][]*cloudprovider.InstanceType{"default": types(true)},
			pods: pod(), want: map[string]string{"p": "0/s.large/b/reserved"}},
		{name: "pool without reserved", pools: []*scheduling.NodePool{odOnly}, types: map[string][]*cloudprovider.InstanceType{"default": types(true)},
			pods: pod(), want: map[string]string{"p": "0/s.large/a/on-demand"}},
		{name: "full reservation", pools: []*scheduling.NodePool{any}, types: map[string][]*cloudprovider.InstanceType{"default": types(false)},
			pods: pod(), want: map[string]string{"p": "0/s.large/a/on-demand"}},
	} {
		t.Run(tc.name, func(t *testing.T) { run(t, tc) })
	}
}

// TestFullReservationsFallThrough (Karpenter v1.15.1): when every reservation a pod could use is full, the pod is
// not held back waiting for room. It goes to the next NodePool by weight, or to the on-demand offerings of its own,
// and a pod that only prefers reserved capacity has the preference relaxed. A pod that requires reserved capacity
// is reported unschedulable with a reason, and is planned again once a reservation has room.
func TestFullReservationsFallThrough(t *testing.T) {
	full := func() []*cloudprovider.InstanceType {
		return []*cloudprovider.InstanceType{test.SchedInstanceType("s.large", "2", "8Gi").Zones(0.10, "a").
			Unavailable("a", cloudprovider.CapacityTypeReserved, 0.10/1e7).Unavailable("b", cloudprovider.CapacityTypeReserved, 0.10/1e7).Obj()}
	}
	room := func() []*cloudprovider.InstanceType {
		return []*cloudprovider.InstanceType{test.SchedInstanceType("s.large", "2", "8Gi").Zones(0.10, "a").
			Unavailable("a", cloudprovider.CapacityTypeReserved, 0.10/1e7).Offering("b", cloudprovider.CapacityTypeReserved, 0.10/1e7).Obj()}
	}
	reservedOnly := test.SchedNodePool("reserved").Weight(100).Requirement(ctKey, corev1.NodeSelectorOpIn, "reserved").Obj()
	onDemand := test.SchedNodePool("on-demand").Weight(10).Requirement(ctKey, corev1.NodeSelectorOpIn, "on-demand").Obj()
	both := test.SchedNodePool("default").Requirement(ctKey, corev1.NodeSelectorOpIn, "reserved", "on-demand").Obj()
	pods := func(f func(*test.SchedPodBuilder) *test.SchedPodBuilder) []*corev1.Pod {
		return []*corev1.Pod{f(test.SchedPod("p0").Requests("1", "1Gi")).Obj(), f(test.SchedPod("p1").Requests("1", "1Gi")).Obj()}
	}
	plain := func(b *test.SchedPodBuilder) *test.SchedPodBuilder { return b }
	for _, tc := range []tcase{
		{name: "a reserved-only pool with full reservations falls through to the next pool",
			pools: []*scheduling.NodePool{reservedOnly, onDemand},
			types: map[string][]*cloudprovider.InstanceType{"reserved": full(), "on-demand": full()},
			pods:  pods(plain), want: map[string]string{"p0": "0/s.large/a/on-demand", "p1": "0/s.large/a/on-demand"}},
		{name: "the reserved-only pool is used while a reservation has room",
			pools: []*scheduling.NodePool{reservedOnly, onDemand},
			types: map[string][]*cloudprovider.InstanceType{"reserved": room(), "on-demand": room()},
			pods:  pods(plain), want: map[string]string{"p0": "0/s.large/b/reserved", "p1": "0/s.large/b/reserved"}},
		{name: "a preference for reserved capacity is relaxed when every reservation is full",
			pools: []*scheduling.NodePool{both}, types: map[string][]*cloudprovider.InstanceType{"default": full()},
			pods: pods(func(b *test.SchedPodBuilder) *test.SchedPodBuilder {
				return b.PreferredNodeTerm(10, test.NodeRequirement(ctKey, corev1.NodeSelectorOpIn, "reserved"))
			}), want: map[string]string{"p0": "0/s.large/a/on-demand", "p1": "0/s.large/a/on-demand"}},
		{name: "a pod requiring reserved capacity is unschedulable, with a reason, while every reservation is full",
			pools: []*scheduling.NodePool{both}, types: map[string][]*cloudprovider.InstanceType{"default": full()},
			pods: pods(func(b *test.SchedPodBuilder) *test.SchedPodBuilder { return b.NodeSelector(ctKey, "reserved") }),
			want: map[string]string{"p0": "unschedulable", "p1": "unschedulable"}, reasons: map[string]string{"p0": "reserved"}},
	} {
		t.Run(tc.name, func(t *testing.T) { run(t, tc) })
	}
}
