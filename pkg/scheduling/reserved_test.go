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
