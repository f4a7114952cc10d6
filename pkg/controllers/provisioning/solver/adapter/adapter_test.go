package adapter

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestSchedulerAdapter(t *testing.T) {
	in := solver.Input{
		Pods: []*corev1.Pod{
			test.Pod("a").Requests("500m", "512Mi").Obj(),
			test.Pod("b").Requests("500m", "512Mi").Obj(),
			test.Pod("nowhere").Requests("100m", "").NodeSelector("team", "absent").Obj(),
		},
		NodePools: []solver.NodePoolOption{{NodePool: test.NodePool("default").Obj(), InstanceTypes: fake.DefaultInstanceTypes()}},
	}
	plan := Scheduler{}.Solve(context.Background(), in)
	if len(plan.NewNodeClaims) != 1 {
		t.Fatalf("new nodeclaims = %d, want 1 (plan %+v)", len(plan.NewNodeClaims), plan)
	}
	nn := plan.NewNodeClaims[0]
	var pods []string
	for _, p := range nn.Pods {
		pods = append(pods, p.Name)
	}
	if diff := cmp.Diff([]string{"a", "b"}, pods); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	if nn.NodePool.Name != "default" || len(nn.InstanceTypes) == 0 {
		t.Errorf("nodeclaim pool %q with %d instance types", nn.NodePool.Name, len(nn.InstanceTypes))
	}
	if len(karpv1.RequirementsFor(nn.Requirements, corev1.LabelInstanceTypeStable)) == 0 {
		t.Errorf("no instance-type requirement in %v", nn.Requirements)
	}
	if _, ok := plan.Unschedulable["default/nowhere"]; !ok {
		t.Errorf("pod nowhere not reported unschedulable: %v", plan.Unschedulable)
	}
}
