package lifecycle

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestPlannedPodsStayOffTheNode: registration copies the NodeClaim's annotations to its Node, except the
// provisioner's list of the pods it planned there.
func TestPlannedPodsStayOffTheNode(t *testing.T) {
	nc := test.NodeClaim("web-a", "web").Obj()
	nc.Annotations = map[string]string{"team": "web", deps.PlannedPodsAnnotationKey: "uid-1,uid-2"}
	node := test.Node("ip-10-0-0-1", "fake:///z/web-a").Obj()
	got := DesiredNode(nc, node).Annotations
	if diff := cmp.Diff(map[string]string{"team": "web"}, got); diff != "" {
		t.Errorf("node annotations (-want +got):\n%s", diff)
	}
	if nc.Annotations[deps.PlannedPodsAnnotationKey] == "" {
		t.Errorf("the NodeClaim lost its annotation")
	}
}

// TestNodeClassLabelReachesTheNode: the karpenter.k8s.aws/ec2nodeclass label set at launch goes to the Node with
// karpenter.sh/nodepool, and the min-values and overlay annotations with the others.
func TestNodeClassLabelReachesTheNode(t *testing.T) {
	nc := test.NodeClaim("web-a", "web").Label("karpenter.k8s.aws/ec2nodeclass", "default").
		Annotation("karpenter.sh/nodeclaim-min-values-relaxed", "false").Obj()
	node := DesiredNode(nc, test.Node("ip-10-0-0-1", "fake:///z/web-a").Obj())
	if got := node.Labels["karpenter.k8s.aws/ec2nodeclass"]; got != "default" {
		t.Errorf("node label karpenter.k8s.aws/ec2nodeclass = %q, want default", got)
	}
	if got := node.Labels["karpenter.sh/nodepool"]; got != "web" {
		t.Errorf("node label karpenter.sh/nodepool = %q, want web", got)
	}
}
