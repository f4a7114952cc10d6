package aws_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/providers/aws"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestLearnedMemoryFromRegisteredNode: a node of m5.large launched from the EC2NodeClass's AMI registers with
// 7800Mi of memory; from then on GetInstanceTypes and launches of m5.large with that AMI set plan with 7800Mi, not
// the VM_MEMORY_OVERHEAD_PERCENT estimate. A node from an AMI the class no longer selects teaches nothing, and a
// new AMI set starts from the estimate again.
func TestLearnedMemoryFromRegisteredNode(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	nc := p.resolvedNodeClass(t)
	ctx := context.Background()
	pool := test.NodePool("default").Obj()
	memoryOf := func(name string) string {
		t.Helper()
		its, err := p.GetInstanceTypes(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range its {
			if it.Name == name {
				return it.Capacity.Memory().String()
			}
		}
		t.Fatalf("%s not offered", name)
		return ""
	}
	estimate := memoryOf("m5.large")
	c5 := memoryOf("c5.large")

	created, err := p.Create(ctx, claim("default-abcde", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if got := created.Status.Capacity.Memory().String(); got != estimate {
		t.Fatalf("first launch capacity %s, want the estimate %s", got, estimate)
	}
	learn := func(imageID, memory string) {
		t.Helper()
		n := test.Node("node-1", created.Status.ProviderID).Capacity(corev1.ResourceMemory, memory).Obj()
		for k, v := range created.Labels {
			n.Labels[k] = v
		}
		n.Labels[karpv1.NodeRegisteredLabelKey] = "true"
		c := created.DeepCopy()
		c.Status.ImageID = imageID
		if err := p.LearnNodeCapacity(ctx, n, c); err != nil {
			t.Fatal(err)
		}
	}

	// A node from an AMI the class does not select (any more) teaches nothing.
	learn("ami-retired", "7000Mi")
	if got := memoryOf("m5.large"); got != estimate {
		t.Errorf("after a node from a retired AMI: m5.large memory %s, want the estimate %s", got, estimate)
	}

	learn(created.Status.ImageID, "7800Mi")
	if got := memoryOf("m5.large"); got != "7800Mi" {
		t.Errorf("after the node registered: m5.large memory %s, want 7800Mi", got)
	}
	if got := memoryOf("c5.large"); got != c5 {
		t.Errorf("c5.large memory %s changed (was %s): only m5.large was learned", got, c5)
	}
	again, err := p.Create(ctx, claim("default-fghij", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Status.Capacity.Memory().String(); got != "7800Mi" {
		t.Errorf("launch after learning: NodeClaim memory capacity %s, want 7800Mi", got)
	}

	// A new AMI for the class: m5.large is estimated again until a node from it registers.
	stored := &awsv1.EC2NodeClass{}
	if err := p.kube.Get(ctx, client.ObjectKey{Name: nc.Name}, stored); err != nil {
		t.Fatal(err)
	}
	before := aws.AMIKey(stored.Status.AMIs)
	for i := range stored.Status.AMIs {
		stored.Status.AMIs[i].ID += "-new"
	}
	if aws.AMIKey(stored.Status.AMIs) == before {
		t.Fatal("AMIKey did not change with the AMI IDs")
	}
	if err := p.kube.Status().Update(ctx, stored); err != nil {
		t.Fatal(err)
	}
	if got := memoryOf("m5.large"); got != estimate {
		t.Errorf("with a new AMI set: m5.large memory %s, want the estimate %s", got, estimate)
	}
}
