package lifecycle

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

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

// TestReplacementRegistersHeld: a disruption command's replacement registers with the hold taint naming its
// command (a preference of the kube-scheduler's, PreferNoSchedule), other NodeClaims without it, and a Node that
// opts out of taint syncing gets none.
func TestReplacementRegistersHeld(t *testing.T) {
	hold := corev1.Taint{Key: "dovetail.sh/replacement-held", Value: "cmd-1", Effect: corev1.TaintEffectPreferNoSchedule}
	for _, tc := range []struct {
		name       string
		annotation string
		optOut     bool
		want       []corev1.Taint
	}{
		{"replacement", "cmd-1", false, []corev1.Taint{hold}},
		{"provisioned", "", false, nil},
		{"do-not-sync-taints", "cmd-1", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := test.NodeClaim("web-a", "web")
			if tc.annotation != "" {
				b = b.Annotation("dovetail.sh/replacement-for", tc.annotation)
			}
			node := test.Node("ip-10-0-0-1", "fake:///z/web-a").Obj()
			node.Spec.Taints = []corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}}
			if tc.optOut {
				node.Labels["karpenter.sh/do-not-sync-taints"] = "true"
			}
			got := DesiredNode(b.Obj(), node).Spec.Taints
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("node taints (-want +got):\n%s", diff)
			}
			// Registered again (a registration pass retried), the Node keeps one hold.
			if again := DesiredNode(b.Obj(), &corev1.Node{Spec: corev1.NodeSpec{Taints: got}}).Spec.Taints; !cmp.Equal(tc.want, again) && !tc.optOut {
				t.Errorf("node taints registered again = %v, want %v", again, tc.want)
			}
		})
	}
}
