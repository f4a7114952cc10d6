package disruption_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

// atNodeLimit is a snapshot of one unhealthy node with pods in a NodePool whose limits.nodes (1) it uses up, so no
// replacement can be launched beside it.
func atNodeLimit(ready bool) *disruption.Snapshot {
	np := test.NodePool("default").Limit(scheduling.ResourceNodes, "1").Obj()
	if ready {
		np.SetCondition(karpv1.ConditionTypeReady, metav1.ConditionTrue, karpv1.ReasonReady, "")
	}
	s := world(np, unhealthy(test.Candidate("a", "medium", 0.2).Pods(pod("web", "1500m")).NotConsolidatable().Obj(), 0, 10*time.Minute))
	s.Cluster.NodePools[0] = test.SchedNodePool("default").Limit(scheduling.ResourceNodes, "1").Usage(scheduling.ResourceNodes, "1").Obj()
	return s
}

func TestDecideTerminateFirstRepair(t *testing.T) {
	cases := []struct {
		name     string
		snap     func() *disruption.Snapshot
		gate     bool
		commands []string
		stays    map[string]disruption.StayReason
	}{
		{"at its node limit, gate off: the node stays (no room to replace it first)", func() *disruption.Snapshot { return atNodeLimit(true) }, false,
			nil, map[string]disruption.StayReason{"a": disruption.StayRepairBlocked}},
		{"at its node limit, TerminateFirstRepair: deleted first", func() *disruption.Snapshot { return atNodeLimit(true) }, true,
			[]string{"unhealthy/terminate-first: 1 node(s) a: KernelReady=False"}, map[string]disruption.StayReason{}},
		{"a NodePool not Ready could not refill: the node stays", func() *disruption.Snapshot { return atNodeLimit(false) }, true,
			nil, map[string]disruption.StayReason{"a": disruption.StayRepairBlocked}},
		{"room for a replacement: replaced first, gate or not", func() *disruption.Snapshot {
			s := atNodeLimit(true)
			s.Cluster.NodePools[0] = test.SchedNodePool("default").Limit(scheduling.ResourceNodes, "2").Usage(scheduling.ResourceNodes, "1").Obj()
			return s
		}, true, []string{"unhealthy/replace: 1 node(s) a, replaced by small: KernelReady=False"}, map[string]disruption.StayReason{}},
		{"pods that fit nowhere for another reason: the node stays", func() *disruption.Snapshot {
			s := atNodeLimit(true)
			s.Cluster.NodePools[0] = test.SchedNodePool("default").Taint("dedicated", "x", corev1.TaintEffectNoSchedule).Obj()
			return s
		}, true, nil, map[string]disruption.StayReason{"a": disruption.StayRepairBlocked}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := disruption.Decide(context.Background(), tc.snap(), disruption.Options{TerminateFirstRepair: tc.gate})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range res.Commands {
				got = append(got, c.Message())
				if c.Decision == disruption.DecisionTerminateFirst && len(c.Replacements) > 0 {
					t.Errorf("terminate-first command %q launches replacements", c.Message())
				}
			}
			if d := cmp.Diff(tc.commands, got); d != "" {
				t.Errorf("commands (-want +got):\n%s", d)
			}
			stays := map[string]disruption.StayReason{}
			for _, s := range res.Stays {
				stays[s.Node] = s.Reason
			}
			if d := cmp.Diff(tc.stays, stays); d != "" {
				t.Errorf("stays (-want +got):\n%s", d)
			}
		})
	}
}
