package disruption_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestCandidateFrom(t *testing.T) {
	created := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	types := []*cloudprovider.InstanceType{
		test.SchedInstanceType("m.large", "2", "8Gi").Offering("a", karpv1.CapacityTypeOnDemand, 0.1).Offering("a", karpv1.CapacityTypeSpot, 0.03).Obj(),
		test.SchedInstanceType("m.xlarge", "4", "16Gi").Offering("a", karpv1.CapacityTypeOnDemand, 0.2).Obj(),
	}
	claim := func() *test.NodeClaimBuilder {
		return test.NodeClaim("nc", "general").NodeName("n").CreatedAt(created).Initialized(created)
	}
	node := func(instanceType, capacityType string) *test.NodeBuilder {
		return test.Node("n", "aws:///a/i-1").Label(corev1.LabelInstanceTypeStable, instanceType).
			Label(corev1.LabelTopologyZone, "a").Label(karpv1.CapacityTypeLabelKey, capacityType)
	}
	web := test.Pod("web").NodeName("n").Obj()
	// want is a candidate of m.large on-demand in zone a that is initialized and nothing else.
	want := func(change func(c *disruption.Candidate)) *disruption.Candidate {
		c := &disruption.Candidate{NodeClaim: "nc", Node: "n", NodePool: "general", InstanceType: "m.large", Zone: "a",
			CapacityType: karpv1.CapacityTypeOnDemand, Price: 0.1, Initialized: true, CreatedAt: created}
		change(c)
		return c
	}
	deleting := node("m.large", karpv1.CapacityTypeOnDemand).Obj()
	deleting.DeletionTimestamp = &metav1.Time{Time: created}
	for _, tc := range []struct {
		name  string
		nc    *karpv1.NodeClaim
		node  *corev1.Node
		pods  []*corev1.Pod
		types []*cloudprovider.InstanceType
		want  *disruption.Candidate
	}{
		{name: "on-demand with a pod", nc: claim().Obj(), node: node("m.large", karpv1.CapacityTypeOnDemand).Obj(),
			pods: []*corev1.Pod{web}, types: types,
			want: want(func(c *disruption.Candidate) { c.Pods = []*corev1.Pod{web} })},
		{name: "spot price", nc: claim().Obj(), node: node("m.large", karpv1.CapacityTypeSpot).Obj(), types: types,
			want: want(func(c *disruption.Candidate) { c.CapacityType, c.Price = karpv1.CapacityTypeSpot, 0.03 })},
		{name: "drifted and consolidatable",
			nc: claim().Condition(karpv1.ConditionTypeDrifted, metav1.ConditionTrue, karpv1.ReasonNodePoolDrifted, created).
				Condition(karpv1.ConditionTypeConsolidatable, metav1.ConditionTrue, "Consolidatable", created).Obj(),
			node: node("m.large", karpv1.CapacityTypeOnDemand).Obj(), types: types,
			want: want(func(c *disruption.Candidate) { c.Drifted, c.Consolidatable = karpv1.ReasonNodePoolDrifted, true })},
		{name: "a false Drifted condition is no drift",
			nc:   claim().Condition(karpv1.ConditionTypeDrifted, metav1.ConditionFalse, "NotDrifted", created).Obj(),
			node: node("m.large", karpv1.CapacityTypeOnDemand).Obj(), types: types, want: want(func(*disruption.Candidate) {})},
		{name: "not initialized", nc: test.NodeClaim("nc", "general").NodeName("n").CreatedAt(created).Launched(created).Obj(),
			node: node("m.large", karpv1.CapacityTypeOnDemand).Obj(), types: types,
			want: want(func(c *disruption.Candidate) { c.Initialized = false })},
		{name: "node being deleted", nc: claim().Obj(), node: deleting, types: types,
			want: want(func(c *disruption.Candidate) { c.Deleting = true })},
		{name: "do-not-disrupt on the node", nc: claim().Obj(),
			node: func() *corev1.Node {
				n := node("m.large", karpv1.CapacityTypeOnDemand).Obj()
				n.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
				return n
			}(), types: types,
			want: want(func(c *disruption.Candidate) {
				c.NodeAnnotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
			})},
		{name: "instance type no longer listed: price 0", nc: claim().Obj(), node: node("old.large", karpv1.CapacityTypeOnDemand).Obj(),
			types: types, want: want(func(c *disruption.Candidate) { c.InstanceType, c.Price = "old.large", 0 })},
		{name: "no offering in its zone and capacity type: price 0", nc: claim().Obj(),
			node: node("m.xlarge", karpv1.CapacityTypeSpot).Obj(), types: types,
			want: want(func(c *disruption.Candidate) {
				c.InstanceType, c.CapacityType, c.Price = "m.xlarge", karpv1.CapacityTypeSpot, 0
			})},
		{name: "no instance types: price 0", nc: claim().Obj(), node: node("m.large", karpv1.CapacityTypeOnDemand).Obj(),
			want: want(func(c *disruption.Candidate) { c.Price = 0 })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := disruption.CandidateFrom(tc.nc, tc.node, tc.pods, tc.types)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CandidateFrom (-want +got):\n%s", diff)
			}
		})
	}
}
