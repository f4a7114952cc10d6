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
