package scheduletest

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

// BenchmarkSnapshot is the benchmark's mixed workload of count pods (test.DiversePods with seed 42) for one
// NodePool "default" (spot and on-demand, linux) against test.BenchmarkInstanceTypes.
func BenchmarkSnapshot(count int) *scheduling.Snapshot { return MixedSnapshot(count, 42) }

// MixedSnapshot is BenchmarkSnapshot's workload drawn with another seed.
func MixedSnapshot(count int, seed int64) *scheduling.Snapshot {
	np := test.SchedNodePool("default").
		Requirement("karpenter.sh/capacity-type", corev1.NodeSelectorOpIn, "spot", "on-demand").
		Requirement(corev1.LabelOSStable, corev1.NodeSelectorOpIn, "linux").Obj()
	return &scheduling.Snapshot{
		Pods:          test.DiversePods(count, seed),
		NodePools:     []*scheduling.NodePool{np},
		InstanceTypes: map[string][]*cloudprovider.InstanceType{"default": test.BenchmarkInstanceTypes()},
	}
}
