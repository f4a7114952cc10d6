package disruption_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/test"
)

// toReboot marks a candidate for a reboot repair (a GPU fault a reboot clears), eligible at the given minute past
// 09:00.
func toReboot(c *disruption.Candidate, minute int) *disruption.Candidate {
	c = unhealthy(c, minute, 5*time.Minute)
	c.Repair.Condition, c.Repair.Message, c.Repair.Reboot = "AcceleratedHardwareReady", "XID46", true
	return c
}

func TestDecideRebootRepair(t *testing.T) {
	cases := []struct {
		name     string
		snap     func() *disruption.Snapshot
		commands []string
		stays    map[string]disruption.StayReason
	}{
		{
			name: "a node with pods is rebooted: no replacement, no simulation",
			snap: func() *disruption.Snapshot {
				return world(nil, toReboot(test.Candidate("a", "medium", 0.2).Pods(pod("web", "1500m")).NotConsolidatable().Obj(), 0))
			},
			commands: []string{"unhealthy/reboot: 1 node(s) a: XID46"},
			stays:    map[string]disruption.StayReason{},
		},
		{
			name: "a node no other could take the pods of is rebooted all the same",
			snap: func() *disruption.Snapshot {
				return world(nil, toReboot(test.Candidate("a", "large", 0.4).Pods(pod("big", "30")).NotConsolidatable().Obj(), 0))
			},
			commands: []string{"unhealthy/reboot: 1 node(s) a: XID46"},
			stays:    map[string]disruption.StayReason{},
		},
		{
			name: "reboots take places in the Unhealthy budget like replacements, oldest eligibility first",
			snap: func() *disruption.Snapshot {
				return world(test.NodePool("default").Budget("1", karpv1.DisruptionReasonUnhealthy).Obj(),
					toReboot(test.Candidate("a", "medium", 0.2).Pods(pod("web", "1500m")).NotConsolidatable().Obj(), 20),
					unhealthy(test.Candidate("b", "medium", 0.2).Pods(pod("api", "1500m")).NotConsolidatable().Obj(), 30, time.Minute),
					toReboot(test.Candidate("c", "medium", 0.2).Pods(pod("db", "1500m")).NotConsolidatable().Obj(), 10))
			},
			commands: []string{"unhealthy/reboot: 1 node(s) c: XID46"},
			stays:    map[string]disruption.StayReason{"a": disruption.StayBudget, "b": disruption.StayBudget},
		},
		{
			name: "a reboot and a replacement within a budget of 2",
			snap: func() *disruption.Snapshot {
				return world(test.NodePool("default").Budget("2", karpv1.DisruptionReasonUnhealthy).Obj(),
					toReboot(test.Candidate("a", "medium", 0.2).Pods(pod("web", "1500m")).NotConsolidatable().Obj(), 10),
					unhealthy(test.Candidate("b", "medium", 0.2).Pods(pod("api", "1500m")).NotConsolidatable().Obj(), 20, time.Minute))
			},
			commands: []string{"unhealthy/reboot: 1 node(s) a: XID46", "unhealthy/replace: 1 node(s) b, replaced by small: KernelReady=False"},
			stays:    map[string]disruption.StayReason{},
		},
		{
			name: "a node already disrupting leaves no room for a reboot under a budget of 1",
			snap: func() *disruption.Snapshot {
				s := world(test.NodePool("default").Budget("1", karpv1.DisruptionReasonUnhealthy).Obj(),
					toReboot(test.Candidate("a", "medium", 0.2).Pods(pod("web", "1500m")).NotConsolidatable().Obj(), 10))
				s.Disrupting = map[string]int{"default": 1}
				return s
			},
			commands: nil,
			stays:    map[string]disruption.StayReason{"a": disruption.StayBudget},
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
				if c.Decision == disruption.DecisionReboot && (len(c.Replacements) > 0 || len(c.Placements) > 0 || c.Evictions > 0) {
					t.Errorf("reboot command %q moves pods or launches: %+v", c.Message(), c)
				}
			}
			if d := cmp.Diff(tc.commands, got); d != "" {
				t.Errorf("commands (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.stays, stayReasons(res)); d != "" {
				t.Errorf("stays (-want +got):\n%s", d)
			}
		})
	}
}
