package disruption

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestNodeClassChangeEnqueuesItsNodeClaims: an EC2NodeClass change re-evaluates the NodeClaims launched from it
// and no other, so an edit that drifts them is noticed at once.
func TestNodeClassChangeEnqueuesItsNodeClaims(t *testing.T) {
	s, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	of := test.NodeClaim("of-class", "default").Obj()
	other := test.NodeClaim("other-class", "default").Obj()
	other.Spec.NodeClassRef.Name = "other"
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(of, other).Build()
	c := NewController(deps.Deps{Client: kube})
	nc := &awsv1.EC2NodeClass{}
	nc.Name = "default"
	var got []string
	for _, r := range c.nodeClassToNodeClaims(context.Background(), nc) {
		got = append(got, r.Name)
	}
	if d := cmp.Diff([]string{"of-class"}, got); d != "" {
		t.Errorf("enqueued (-want +got):\n%s", d)
	}
}
