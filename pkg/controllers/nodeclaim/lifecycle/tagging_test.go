package lifecycle

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/test"
)

type taggingCloud struct {
	*fake.CloudProvider
	tagged map[string]map[string]string
}

func (t *taggingCloud) TagInstance(_ context.Context, id string, tags map[string]string) error {
	t.tagged[id] = tags
	return nil
}

func TestTagOnce(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	nc := test.NodeClaim("web-abcde", "web").ProviderID("aws:///us-west-2a/i-0123").Obj()
	nc.Status.NodeName = "ip-10-0-0-1"
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(nc).Build()
	cloud := &taggingCloud{tagged: map[string]map[string]string{}}
	m := metrics.NewForTest()
	c := NewController(deps.Deps{Client: kube, CloudProvider: metrics.Instrument(cloud, m), Metrics: m})
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		got := &karpv1.NodeClaim{}
		if err := kube.Get(ctx, client.ObjectKey{Name: nc.Name}, got); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.tag(ctx, got); err != nil {
			t.Fatalf("tag: %v", err)
		}
		if got.Annotations[awsv1.AnnotationInstanceTagged] != "true" {
			t.Errorf("pass %d: tagged annotation missing", i)
		}
		cloud.tagged["i-0123"]["seen"] = "yes"
	}
	want := map[string]map[string]string{"i-0123": {"Name": "ip-10-0-0-1", NodeClaimTagKey: "web-abcde", "seen": "yes"}}
	if diff := cmp.Diff(want, cloud.tagged); diff != "" {
		t.Errorf("tags (-want +got), second pass must not tag again:\n%s", diff)
	}
}

// TestTagAfterStatusWrite: the tagged annotation is recorded from a copy read before another controller wrote the
// NodeClaim's status (a cache behind the API server); the write must not fail for the stale resourceVersion.
func TestTagAfterStatusWrite(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	nc := test.NodeClaim("web-abcde", "web").ProviderID("aws:///us-west-2a/i-0123").Obj()
	nc.Status.NodeName = "ip-10-0-0-1"
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(nc).WithStatusSubresource(&karpv1.NodeClaim{}).Build()
	ctx := context.Background()
	stale := &karpv1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKey{Name: nc.Name}, stale); err != nil {
		t.Fatal(err)
	}
	other := stale.DeepCopy()
	other.Status.ImageID = "ami-1"
	if err := kube.Status().Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	cloud := &taggingCloud{tagged: map[string]map[string]string{}}
	m := metrics.NewForTest()
	c := NewController(deps.Deps{Client: kube, CloudProvider: metrics.Instrument(cloud, m), Metrics: m})
	if _, _, err := c.tag(ctx, stale); err != nil {
		t.Fatalf("tag from a stale copy: %v", err)
	}
	got := &karpv1.NodeClaim{}
	if err := kube.Get(ctx, client.ObjectKey{Name: nc.Name}, got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations[awsv1.AnnotationInstanceTagged] != "true" || got.Status.ImageID != "ami-1" {
		t.Errorf("annotation %q, image %q: want both writes kept", got.Annotations[awsv1.AnnotationInstanceTagged], got.Status.ImageID)
	}
}
