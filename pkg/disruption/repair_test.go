package disruption_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	policyv1 "k8s.io/api/policy/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/test"
)

// unhealthy marks a candidate for node repair, eligible at the given minute past 09:00 (the snapshot's time is
// 10:00), with a drain bound of bound (none when 0).
func unhealthy(c *disruption.Candidate, minute int, bound time.Duration) *disruption.Candidate {
	c.Repair = &disruption.Repair{Condition: "KernelReady", Message: "KernelReady=False",
		Eligible: time.Date(2026, 11, 24, 9, minute, 0, 0, time.UTC)}
	if bound > 0 {
		c.Repair.DrainBound = &bound
	}
	return c
}

func TestDecideRepair(t *testing.T) {
	const drain = 10 * time.Minute
	cases := []struct {
		name string
		snap func() *disruption.Snapshot
		// commands are every command's message; stays every stay's reason.
		commands []string
		stays    map[string]disruption.StayReason
	}{
		{
			name: "an unhealthy node is replaced first, although consolidation would leave it",
			snap: func() *disruption.Snapshot {
				return world(nil, unhealthy(test.Candidate("a", "medium", 0.2).Pods(pod("web", "1500m")).NotConsolidatable().Obj(), 0, drain))
			},
			commands: []string{"unhealthy/replace: 1 node(s) a, replaced by small: KernelReady=False"},
			stays:    map[string]disruption.StayReason{},
		},
		{
			name: "an empty unhealthy node is deleted without a replacement",
			snap: func() *disruption.Snapshot {
				return world(nil, unhealthy(test.Candidate("a", "medium", 0.2).NotConsolidatable().Obj(), 0, drain))
			},
			commands: []string{"unhealthy/delete: 1 node(s) a: KernelReady=False"},
			stays:    map[string]disruption.StayReason{},
		},
		{
			name: "repair goes before drift",
			snap: func() *disruption.Snapshot {
				return world(nil, unhealthy(test.Candidate("a", "medium", 0.2).Pods(pod("web", "1500m")).
					Drifted(karpv1.ReasonNodePoolDrifted).Obj(), 0, drain))
			},
			commands: []string{"unhealthy/replace: 1 node(s) a, replaced by small: KernelReady=False"},
			stays:    map[string]disruption.StayReason{},
		},
		{
			name: "an Unhealthy budget of 1 repairs the node eligible first; the other waits",
			snap: func() *disruption.Snapshot {
				return world(test.NodePool("default").Budget("1", karpv1.DisruptionReasonUnhealthy).Obj(),
					unhealthy(test.Candidate("a", "medium", 0.2).Pods(pod("web", "1500m")).NotConsolidatable().Obj(), 30, drain),
					unhealthy(test.Candidate("b", "medium", 0.2).Pods(pod("api", "1500m")).NotConsolidatable().Obj(), 10, drain))
			},
			commands: []string{"unhealthy/replace: 1 node(s) b, replaced by small: KernelReady=False"},
			stays:    map[string]disruption.StayReason{"a": disruption.StayBudget},
		},
		{
			name: "a Drifted budget of 0 does not hold repair back",
			snap: func() *disruption.Snapshot {
				return world(test.NodePool("default").Budget("0", karpv1.DisruptionReasonDrifted).Obj(),
					unhealthy(test.Candidate("a", "medium", 0.2).Pods(pod("web", "1500m")).NotConsolidatable().Obj(), 0, drain))
			},
			commands: []string{"unhealthy/replace: 1 node(s) a, replaced by small: KernelReady=False"},
			stays:    map[string]disruption.StayReason{},
		},
		{
			name: "a node not yet initialized needs no budget",
			snap: func() *disruption.Snapshot {
				c := unhealthy(test.Candidate("a", "medium", 0.2).NotConsolidatable().Obj(), 0, drain)
				c.Initialized = false
				return world(test.NodePool("default").Budget("0").Obj(), c)
			},
			commands: []string{"unhealthy/delete: 1 node(s) a: KernelReady=False"},
			stays:    map[string]disruption.StayReason{},
		},
		{
			name: "do-not-disrupt and a PodDisruptionBudget do not hold a bounded repair",
			snap: func() *disruption.Snapshot {
				s := world(nil, unhealthy(test.Candidate("a", "medium", 0.2).Pods(pod("web", "1500m")).NotConsolidatable().
					NodeAnnotation(karpv1.DoNotDisruptAnnotationKey, "true").Obj(), 0, drain))
				s.PodDisruptionBudgets = []*policyv1.PodDisruptionBudget{pdb("web", 0)}
				return s
			},
			commands: []string{"unhealthy/replace: 1 node(s) a, replaced by small: KernelReady=False"},
			stays:    map[string]disruption.StayReason{},
		},
		{
			name: "without a drain bound, a PodDisruptionBudget that allows nothing holds repair",
			snap: func() *disruption.Snapshot {
				s := world(nil, unhealthy(test.Candidate("a", "medium", 0.2).Pods(pod("web", "1500m")).NotConsolidatable().Obj(), 0, 0))
				s.PodDisruptionBudgets = []*policyv1.PodDisruptionBudget{pdb("web", 0)}
				return s
			},
			stays: map[string]disruption.StayReason{"a": disruption.StayRepairBlocked},
		},
		{
			name: "the NodeClaim's terminationGracePeriod bounds the drain when the policy does not",
			snap: func() *disruption.Snapshot {
				c := unhealthy(test.Candidate("a", "medium", 0.2).Pods(pod("web", "1500m")).NotConsolidatable().Obj(), 0, 0)
				c.Repair.NodeClaimGracePeriod = true
				s := world(nil, c)
				s.PodDisruptionBudgets = []*policyv1.PodDisruptionBudget{pdb("web", 0)}
				return s
			},
			commands: []string{"unhealthy/replace: 1 node(s) a, replaced by small: KernelReady=False"},
			stays:    map[string]disruption.StayReason{},
		},
		{
			name: "pods of an unhealthy node do not go to another unhealthy node",
			snap: func() *disruption.Snapshot {
				return world(nil,
					unhealthy(test.Candidate("a", "medium", 0.2).Pods(pod("web", "500m")).NotConsolidatable().Obj(), 0, drain),
					unhealthy(test.Candidate("b", "large", 0.4).NotConsolidatable().Obj(), 5, drain))
			},
			commands: []string{"unhealthy/replace: 1 node(s) a, replaced by small: KernelReady=False", "unhealthy/delete: 1 node(s) b: KernelReady=False"},
			stays:    map[string]disruption.StayReason{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := disruption.Decide(context.Background(), tc.snap(), disruption.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range res.Commands {
				got = append(got, c.Message())
				if c.Reason == karpv1.DisruptionReasonUnhealthy && c.Savings != 0 && res.SavingsPerHour != 0 {
					t.Errorf("repair command %q counted as savings (%v/h)", c.Message(), res.SavingsPerHour)
				}
			}
			if diff := cmp.Diff(tc.commands, got); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
			stays := map[string]disruption.StayReason{}
			for _, s := range res.Stays {
				stays[s.NodeClaim] = s.Reason
			}
			if tc.stays != nil {
				if diff := cmp.Diff(tc.stays, stays); diff != "" {
					t.Errorf("stays (-want +got):\n%s", diff)
				}
			}
		})
	}
}
