package hash

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/hashversion"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestRestampsNodeClaimsOfAnotherScheme: a NodePool and its NodeClaims as Karpenter leaves them (hash version v3).
// The NodeClaims launched from the template as it is now take Dovetail's hash; the one launched before the template
// changed keeps a stamp that differs from it (it stays drifted); one already in Dovetail's scheme and another pool's
// NodeClaim are not touched; the NodePool is stamped last.
func TestRestampsNodeClaimsOfAnotherScheme(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	np := test.NodePool("p").Obj()
	np.Annotations = map[string]string{karpv1.NodePoolHashAnnotationKey: "k-now", karpv1.NodePoolHashVersionAnnotationKey: "v3"}
	want := hashversion.NodePool(np)
	objs := []client.Object{np,
		test.NodeClaim("current-1", "p").NodePoolHash("k-now", "v3").Obj(),
		test.NodeClaim("current-2", "p").NodePoolHash("k-now", "v3").Obj(),
		test.NodeClaim("older", "p").NodePoolHash("k-old", "v3").Obj(),
		test.NodeClaim("unstamped", "p").Obj(),
		test.NodeClaim("dovetail", "p").NodePoolHash("d-old", hashversion.NodePoolVersion).Obj(),
		test.NodeClaim("other-pool", "q").NodePoolHash("k-old", "v3").Obj(),
	}
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	c := NewController(deps.Deps{Client: kube})
	for range 2 { // idempotent
		if _, err := c.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "p"}}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string][2]string{}
	claims := &karpv1.NodeClaimList{}
	if err := kube.List(context.Background(), claims); err != nil {
		t.Fatal(err)
	}
	for _, nc := range claims.Items {
		got[nc.Name] = [2]string{nc.Annotations[karpv1.NodePoolHashAnnotationKey], nc.Annotations[karpv1.NodePoolHashVersionAnnotationKey]}
	}
	wantClaims := map[string][2]string{
		"current-1":  {want, hashversion.NodePoolVersion},
		"current-2":  {want, hashversion.NodePoolVersion},
		"older":      {"v3/k-old", hashversion.NodePoolVersion},
		"unstamped":  {want, hashversion.NodePoolVersion},
		"dovetail":   {"d-old", hashversion.NodePoolVersion},
		"other-pool": {"k-old", "v3"},
	}
	if d := cmp.Diff(wantClaims, got); d != "" {
		t.Errorf("nodeclaim stamps (-want +got):\n%s", d)
	}
	after := &karpv1.NodePool{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: "p"}, after); err != nil {
		t.Fatal(err)
	}
	if h, v := after.Annotations[karpv1.NodePoolHashAnnotationKey], after.Annotations[karpv1.NodePoolHashVersionAnnotationKey]; h != want || v != hashversion.NodePoolVersion {
		t.Errorf("nodepool stamp %s/%s, want %s/%s", v, h, hashversion.NodePoolVersion, want)
	}
	if r := nodePoolOfForeignClaim(context.Background(), test.NodeClaim("x", "p").NodePoolHash("k", "v3").Obj()); len(r) != 1 || r[0].Name != "p" {
		t.Errorf("a NodeClaim of another scheme maps to %v, want its NodePool", r)
	}
	if r := nodePoolOfForeignClaim(context.Background(), test.NodeClaim("x", "p").NodePoolHash("k", hashversion.NodePoolVersion).Obj()); len(r) != 0 {
		t.Errorf("a NodeClaim of this scheme maps to %v, want nothing", r)
	}
}

// TestStaleClaimKeepsItsDriftedStamp: a pass that reads the NodeClaims from a cache still behind the previous
// pass's restamp, and the NodePool already in Dovetail's scheme, has no evidence of drift for a NodeClaim of the
// older template; it must not overwrite the drifted stamp the previous pass wrote.
func TestStaleClaimKeepsItsDriftedStamp(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	np := test.NodePool("p").Obj()
	np.Annotations = map[string]string{karpv1.NodePoolHashAnnotationKey: "k-now", karpv1.NodePoolHashVersionAnnotationKey: "v3"}
	kube := clientfake.NewClientBuilder().WithScheme(scheme).
		WithObjects(np, test.NodeClaim("older", "p").NodePoolHash("k-old", "v3").Obj()).Build()
	// The cache as it was before the first pass: it never sees the restamp.
	cached, err := test.FrozenNodeClaimList(context.Background(), kube)
	if err != nil {
		t.Fatal(err)
	}
	c := NewController(deps.Deps{Client: cached})
	for range 2 {
		if _, err := c.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "p"}}); err != nil {
			t.Fatal(err)
		}
	}
	nc := &karpv1.NodeClaim{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: "older"}, nc); err != nil {
		t.Fatal(err)
	}
	got := [2]string{nc.Annotations[karpv1.NodePoolHashAnnotationKey], nc.Annotations[karpv1.NodePoolHashVersionAnnotationKey]}
	if want := [2]string{"v3/k-old", hashversion.NodePoolVersion}; got != want {
		t.Errorf("stamp of the nodeclaim of the older template after a pass on a stale cache: %v, want %v (drifted)", got, want)
	}
}
