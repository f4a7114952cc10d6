package scheduling_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

const (
	tenancyKey   = "karpenter.k8s.aws/instance-tenancy"
	partitionKey = "karpenter.k8s.aws/placement-group-partition"
)

// launchLabelTypes: arm.large (cheapest) launches only with default tenancy; s.large with default or dedicated
// tenancy in partitions 1-3; m.xlarge has no launch labels at all.
func launchLabelTypes() []*cloudprovider.InstanceType {
	arm := test.SchedInstanceType("arm.large", "2", "8Gi").Label(corev1.LabelArchStable, "arm64").Zones(0.08, "a").Obj()
	arm.LaunchLabels = map[string][]string{tenancyKey: {"default"}}
	s := test.SchedInstanceType("s.large", "2", "8Gi").Zones(0.10, "a").Obj()
	s.LaunchLabels = map[string][]string{tenancyKey: {"dedicated", "default"}, partitionKey: {"1", "2", "3"}}
	m := test.SchedInstanceType("m.xlarge", "4", "16Gi").Zones(0.20, "a").Obj()
	return []*cloudprovider.InstanceType{arm, s, m}
}

// TestLaunchLabels: a pod's requirement on a label the launch chooses (instance tenancy, placement group
// partition) is met by the instance types that can launch with a value it allows, whether or not the NodePool
// names the key, as Karpenter treats its undefined well-known labels; the NodeClaim carries the requirement (and,
// for one value, the label) to the launch. A NodePool restricting the key still binds, and a value no type can
// launch with leaves the pod pending with a reason.
func TestLaunchLabels(t *testing.T) {
	req := func(key string, op corev1.NodeSelectorOperator, vs ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: vs}
	}
	for _, tc := range []struct {
		name   string
		pool   *scheduling.NodePool
		pod    *corev1.Pod
		want   string // "<type>" or "unschedulable"
		reason string
		// wantReq and wantLabel are what the NodeClaim must carry for key (wantReq.Key "" checks nothing).
		wantReq   corev1.NodeSelectorRequirement
		wantLabel string
	}{
		{name: "dedicated without a NodePool requirement", pod: test.SchedPod("p").NodeSelector(tenancyKey, "dedicated").Obj(),
			want: "s.large", wantReq: req(tenancyKey, corev1.NodeSelectorOpIn, "dedicated"), wantLabel: "dedicated"},
		{name: "default tenancy takes the cheapest type", pod: test.SchedPod("p").NodeSelector(tenancyKey, "default").Obj(),
			want: "arm.large", wantReq: req(tenancyKey, corev1.NodeSelectorOpIn, "default"), wantLabel: "default"},
		{name: "NotIn dedicated", pod: test.SchedPod("p").RequiredNodeTerm(req(tenancyKey, corev1.NodeSelectorOpNotIn, "dedicated")).Obj(),
			want: "arm.large", wantReq: req(tenancyKey, corev1.NodeSelectorOpNotIn, "dedicated")},
		{name: "NodePool allowing both", pool: test.SchedNodePool("default").Requirement(tenancyKey, corev1.NodeSelectorOpIn, "default", "dedicated").Obj(),
			pod: test.SchedPod("p").NodeSelector(tenancyKey, "dedicated").Obj(), want: "s.large",
			wantReq: req(tenancyKey, corev1.NodeSelectorOpIn, "dedicated"), wantLabel: "dedicated"},
		{name: "NodePool allowing only default", pool: test.SchedNodePool("default").Requirement(tenancyKey, corev1.NodeSelectorOpIn, "default").Obj(),
			pod: test.SchedPod("p").NodeSelector(tenancyKey, "dedicated").Obj(), want: "unschedulable", reason: "NodePool default allows"},
		{name: "NodePool requiring dedicated leaves out types without it", pool: test.SchedNodePool("default").Requirement(tenancyKey, corev1.NodeSelectorOpIn, "dedicated").Obj(),
			pod: test.SchedPod("p").Obj(), want: "s.large", wantReq: req(tenancyKey, corev1.NodeSelectorOpIn, "dedicated"), wantLabel: "dedicated"},
		{name: "a tenancy no type launches with", pod: test.SchedPod("p").NodeSelector(tenancyKey, "host").Obj(),
			want: "unschedulable", reason: "no instance type"},
		{name: "partition", pod: test.SchedPod("p").NodeSelector(partitionKey, "2").Obj(),
			want: "s.large", wantReq: req(partitionKey, corev1.NodeSelectorOpIn, "2"), wantLabel: "2"},
		{name: "a partition the group does not have", pod: test.SchedPod("p").NodeSelector(partitionKey, "7").Obj(),
			want: "unschedulable", reason: "no instance type"},
		{name: "another unknown label still needs the NodePool", pod: test.SchedPod("p").NodeSelector("team", "x").Obj(),
			want: "unschedulable", reason: "does not set label team"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := tc.pool
			if pool == nil {
				pool = test.SchedNodePool("default").Obj()
			}
			plan := run(t, tcase{pools: []*scheduling.NodePool{pool}, types: map[string][]*cloudprovider.InstanceType{"default": launchLabelTypes()},
				pods: []*corev1.Pod{tc.pod}, reasons: map[string]string{"p": tc.reason}})
			if tc.want == "unschedulable" {
				if len(plan.Unschedulable) != 1 {
					t.Fatalf("pod placed: %+v", plan.NodeClaims)
				}
				return
			}
			if len(plan.NodeClaims) != 1 {
				t.Fatalf("NodeClaims %d, unschedulable %+v", len(plan.NodeClaims), plan.Unschedulable)
			}
			nc := plan.NodeClaims[0]
			if nc.InstanceType != tc.want {
				t.Errorf("instance type %s, want %s", nc.InstanceType, tc.want)
			}
			if tc.wantReq.Key == "" {
				return
			}
			var got []corev1.NodeSelectorRequirement
			for _, r := range nc.Requirements {
				if r.Key == tc.wantReq.Key {
					got = append(got, r.NodeSelectorRequirement)
				}
			}
			if d := cmp.Diff([]corev1.NodeSelectorRequirement{tc.wantReq}, got); d != "" {
				t.Errorf("NodeClaim requirements on %s (-want +got):\n%s", tc.wantReq.Key, d)
			}
			if got := nc.Labels[tc.wantReq.Key]; got != tc.wantLabel {
				t.Errorf("NodeClaim label %s = %q, want %q", tc.wantReq.Key, got, tc.wantLabel)
			}
		})
	}
}
