package aws

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws/resolve"
)

func TestPlacementPartitionAndTenancy(t *testing.T) {
	in := func(key string, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
	}
	notIn := func(key string, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpNotIn, Values: values}
	}
	parts := &resolve.PlacementGroup{ID: "pg-1", Strategy: resolve.PlacementStrategyPartition, PartitionCount: 3}
	cluster := &resolve.PlacementGroup{ID: "pg-2", Strategy: resolve.PlacementStrategyCluster}
	cases := []struct {
		name      string
		group     *resolve.PlacementGroup
		reqs      []corev1.NodeSelectorRequirement
		partition int32
		tenancy   string
	}{
		{"no group", nil, nil, 0, "default"},
		{"cluster group", cluster, []corev1.NodeSelectorRequirement{in(awsv1.LabelPlacementGroupPartition, "2")}, 0, "default"},
		{"partition, any", parts, nil, 1, "default"},
		{"partition, lowest allowed", parts, []corev1.NodeSelectorRequirement{in(awsv1.LabelPlacementGroupPartition, "3", "2")}, 2, "default"},
		{"partition, excluded", parts, []corev1.NodeSelectorRequirement{notIn(awsv1.LabelPlacementGroupPartition, "1")}, 2, "default"},
		{"partition outside the group", parts, []corev1.NodeSelectorRequirement{in(awsv1.LabelPlacementGroupPartition, "5")}, 0, "default"},
		{"dedicated only", nil, []corev1.NodeSelectorRequirement{in(awsv1.LabelInstanceTenancy, "dedicated")}, 0, "dedicated"},
		{"either tenancy", nil, []corev1.NodeSelectorRequirement{in(awsv1.LabelInstanceTenancy, "dedicated", "default")}, 0, "default"},
		{"not default", nil, []corev1.NodeSelectorRequirement{notIn(awsv1.LabelInstanceTenancy, "default")}, 0, "dedicated"},
	}
	for _, tc := range cases {
		if got := placementPartition(tc.group, tc.reqs); got != tc.partition {
			t.Errorf("%s: partition %d, want %d", tc.name, got, tc.partition)
		}
		if got := tenancy(tc.reqs); got != tc.tenancy {
			t.Errorf("%s: tenancy %s, want %s", tc.name, got, tc.tenancy)
		}
	}
}
