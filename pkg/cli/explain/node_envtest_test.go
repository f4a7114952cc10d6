package explain

import (
	"bytes"
	"context"
	"strings"
	"testing"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestExplainNodeCommand runs `explain node` as dovetailctl does (flags, kubeconfig, a real API server): an
// empty node would be deleted now; with a do-not-disrupt pod on it, it stays.
func TestExplainNodeCommand(t *testing.T) {
	env := test.StartCLIEnv(t)
	ctx := context.Background()
	explain := func() string {
		t.Helper()
		cmd := NewCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs([]string{"node", "n1", "--kubeconfig", env.Kubeconfig, "--instance-types", "testdata/types.json"})
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatalf("explain node n1: %v", err)
		}
		t.Logf("dovetailctl explain node n1:\n%s", out.String())
		return out.String()
	}

	nc, node := dovetailNode("n1", "m5.large", "2", "8Gi")
	env.CreateWithStatus(t, onDemand().Obj(), test.EC2NodeClass("default", "test").Obj(), nc.Obj(), node.Obj(),
		test.Pod("agent").Requests("100m", "100Mi").OwnedBy("apps/v1", "DaemonSet", "agent").Running("n1").Obj())
	out := explain()
	for _, want := range []string{
		"nodepool: general  nodeclaim: n1-claim",
		"price: $0.0960/h (testdata/types.json)",
		"Disruption decision: would be disrupted now: empty/delete (empty): 1 node(s) n1, saving $0.0960/h",
		"Disruption command in progress: none",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("empty node: output lacks %q:\n%s", want, out)
		}
	}

	env.CreateWithStatus(t, test.Pod("small").Requests("100m", "128Mi").Annotation(karpv1.DoNotDisruptAnnotationKey, "true").Running("n1").Obj())
	out = explain()
	for _, want := range []string{
		"Disruption decision: stays [DoNotDisrupt]: pod default/small has the annotation karpenter.sh/do-not-disrupt=true",
		"Why it stays:",
		"pod default/small has karpenter.sh/do-not-disrupt=true",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("do-not-disrupt pod: output lacks %q:\n%s", want, out)
		}
	}
}
