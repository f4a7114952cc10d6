package termination_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// A Node owned by its NodeClaim (as registration leaves it) is matched through the owner reference: deleting
// either object drains and terminates both, and the instance.
func TestOwnedNodeTerminates(t *testing.T) {
	for _, deleteNode := range []bool{false, true} {
		name := map[bool]string{false: "delete nodeclaim", true: "delete node"}[deleteNode]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			nc, node := h.launch(nil)
			patch := client.MergeFrom(node.DeepCopy())
			node.OwnerReferences = []metav1.OwnerReference{{
				APIVersion: karpv1.GroupVersion.String(), Kind: "NodeClaim", Name: nc.Name, UID: nc.UID,
			}}
			h.must(h.c.Patch(h.ctx, node, patch))
			if deleteNode {
				h.must(h.c.Delete(h.ctx, node))
				h.reconcileNode()
				if claim := h.getClaim(); claim == nil || claim.DeletionTimestamp == nil {
					t.Fatalf("deleting the owned Node did not delete its NodeClaim")
				}
			} else {
				h.deleteClaim()
			}
			h.settle(10)
			if got := h.cloud.Deleted(); len(got) != 1 || got[0] != nc.Status.ProviderID {
				t.Errorf("terminated instances = %v, want [%s]", got, nc.Status.ProviderID)
			}
		})
	}
}
