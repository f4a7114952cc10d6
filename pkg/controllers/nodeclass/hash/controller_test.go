package hash

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/test"
)

// fixedHasher hashes every class alike.
type fixedHasher struct{ hash, version string }

func (f fixedHasher) NodeClassStamp(*awsv1.EC2NodeClass) (string, string) { return f.hash, f.version }

// stamped returns a launched NodeClaim with the given class stamp.
func stamped(b *test.NodeClaimBuilder, hash, version string) *karpv1.NodeClaim {
	return b.ProviderID("aws:///us-west-2a/i-0123456789abcdef0").
		Annotation(awsv1.AnnotationEC2NodeClassHash, hash).Annotation(awsv1.AnnotationEC2NodeClassHashVersion, version).Obj()
}

// TestRestampsNodeClaimsOfAnotherScheme: an EC2NodeClass and its NodeClaims as Karpenter leaves them (hash version
// v5): those launched from the class as it is take Dovetail's stamp, the one launched from an older version of the
// class keeps drift, a NodeClaim of another class and one not launched yet are untouched, and the class is stamped.
func TestRestampsNodeClaimsOfAnotherScheme(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	class := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default", Annotations: map[string]string{
		awsv1.AnnotationEC2NodeClassHash: "k-now", awsv1.AnnotationEC2NodeClassHashVersion: "v5"}}}
	other := test.NodeClaim("other-class", "p")
	otherObj := stamped(other, "k-old", "v5")
	otherObj.Spec.NodeClassRef.Name = "gpu"
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(class,
		stamped(test.NodeClaim("current", "p"), "k-now", "v5"),
		stamped(test.NodeClaim("older", "p"), "k-old", "v5"),
		stamped(test.NodeClaim("dovetail", "p"), "d-1", "v1"),
		test.NodeClaim("not-launched", "p").Obj(),
		otherObj,
	).Build()
	c := New(kube, fixedHasher{hash: "d-2", version: "v1"})
	for range 2 {
		if _, err := c.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "default"}}); err != nil {
			t.Fatal(err)
		}
	}
	claims := &karpv1.NodeClaimList{}
	if err := kube.List(context.Background(), claims); err != nil {
		t.Fatal(err)
	}
	got := map[string][2]string{}
	for _, nc := range claims.Items {
		got[nc.Name] = [2]string{nc.Annotations[awsv1.AnnotationEC2NodeClassHash], nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion]}
	}
	want := map[string][2]string{
		"current":      {"d-2", "v1"},
		"older":        {"v5/k-old", "v1"},
		"dovetail":     {"d-1", "v1"},
		"not-launched": {"", ""},
		"other-class":  {"k-old", "v5"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("nodeclaim stamps (-want +got):\n%s", d)
	}
	after := &awsv1.EC2NodeClass{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: "default"}, after); err != nil {
		t.Fatal(err)
	}
	if h, v := after.Annotations[awsv1.AnnotationEC2NodeClassHash], after.Annotations[awsv1.AnnotationEC2NodeClassHashVersion]; h != "d-2" || v != "v1" {
		t.Errorf("class stamp %s/%s, want v1/d-2", v, h)
	}
	if r := c.nodeClassOfForeignClaim(context.Background(), stamped(test.NodeClaim("x", "p"), "k", "v5")); len(r) != 1 || r[0].Name != "default" {
		t.Errorf("a NodeClaim of another scheme maps to %v, want its class", r)
	}
	if r := c.nodeClassOfForeignClaim(context.Background(), test.NodeClaim("x", "p").Obj()); len(r) != 0 {
		t.Errorf("a NodeClaim not launched yet maps to %v, want nothing (its launch stamps it)", r)
	}
}

// TestStaleClaimKeepsItsDriftedStamp: a pass reading the NodeClaims from a cache behind the previous pass's
// restamp, with the class already in Dovetail's scheme, must not overwrite a drifted stamp.
func TestStaleClaimKeepsItsDriftedStamp(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme, awsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	class := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "default", Annotations: map[string]string{
		awsv1.AnnotationEC2NodeClassHash: "k-now", awsv1.AnnotationEC2NodeClassHashVersion: "v5"}}}
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(class, stamped(test.NodeClaim("older", "p"), "k-old", "v5")).Build()
	// The cache as it was before the first pass: it never sees the restamp.
	cached, err := test.FrozenNodeClaimList(context.Background(), kube)
	if err != nil {
		t.Fatal(err)
	}
	c := New(cached, fixedHasher{hash: "d-2", version: "v1"})
	for range 2 {
		if _, err := c.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "default"}}); err != nil {
			t.Fatal(err)
		}
	}
	nc := &karpv1.NodeClaim{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: "older"}, nc); err != nil {
		t.Fatal(err)
	}
	got := [2]string{nc.Annotations[awsv1.AnnotationEC2NodeClassHash], nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion]}
	if want := [2]string{"v5/k-old", "v1"}; got != want {
		t.Errorf("stamp of the nodeclaim of the older class after a pass on a stale cache: %v, want %v (drifted)", got, want)
	}
}
