package explain

import (
	"bytes"
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestExplainNodeCommand runs `explain node` as dovetailctl does (flags, kubeconfig, a real API server): an
// empty node would be deleted now; with a do-not-disrupt pod on it, it stays.
func TestExplainNodeCommand(t *testing.T) {
	s, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	env := test.StartEnv(t, s)
	kubeconfig := test.Kubeconfig(t, env.Config)
	ctx := context.Background()
	c := env.Client
	create := func(objs ...client.Object) {
		t.Helper()
		for _, o := range objs {
			status := o.DeepCopyObject().(client.Object)
			if err := c.Create(ctx, o); err != nil {
				t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
			}
			// The API server drops status on create: write it through the status subresource.
			switch x := o.(type) {
			case *karpv1.NodeClaim:
				x.Status = status.(*karpv1.NodeClaim).Status
			case *corev1.Node:
				x.Status = status.(*corev1.Node).Status
			case *corev1.Pod:
				x.Status = status.(*corev1.Pod).Status
			default:
				continue
			}
			if err := c.Status().Update(ctx, o); err != nil {
				t.Fatalf("status of %T %s: %v", o, o.GetName(), err)
			}
		}
	}
	explain := func() string {
		t.Helper()
		cmd := NewCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs([]string{"node", "n1", "--kubeconfig", kubeconfig, "--instance-types", "testdata/types.json"})
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatalf("explain node n1: %v", err)
		}
		t.Logf("dovetailctl explain node n1:\n%s", out.String())
		return out.String()
	}

	nc, node := dovetailNode("n1", "m5.large", "2", "8Gi")
	create(onDemand().Obj(), test.EC2NodeClass("default", "test").Obj(), nc.Obj(), node.Obj(),
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

	create(test.Pod("small").Requests("100m", "128Mi").Annotation(karpv1.DoNotDisruptAnnotationKey, "true").Running("n1").Obj())
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
