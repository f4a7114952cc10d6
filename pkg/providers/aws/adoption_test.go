package aws_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/nodeclaim/garbagecollection"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
	"github.com/dovetail/dovetail/pkg/providers/aws/tags"
	"github.com/dovetail/dovetail/pkg/test"
)

// karpenterize removes the cluster-UID tag from an instance, leaving it as Karpenter leaves the instances it
// launches (the cluster's name tag, karpenter.sh/nodepool, karpenter.sh/nodeclaim, no Dovetail identity).
func karpenterize(t *testing.T, p *provider, providerID string, extra ...ec2types.Tag) string {
	t.Helper()
	id, err := instance.ParseProviderID(providerID)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := p.ec2.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{id}, Tags: []ec2types.Tag{{Key: awssdk.String(tags.ClusterUID)}}}); err != nil {
		t.Fatalf("DeleteTags(%s): %v", id, err)
	}
	if len(extra) > 0 {
		if _, err := p.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: extra}); err != nil {
			t.Fatalf("CreateTags(%s): %v", id, err)
		}
	}
	return id
}

// TestGarbageCollectionAdoptsKarpenterInstances: on a cluster Karpenter launched (instances with the cluster's name
// and no cluster UID), a garbage-collection pass of the cluster that took it over deletes no NodeClaim and
// terminates nothing: it adopts the instances its NodeClaims name, and only those. A second cluster of the same name
// in the account, also launched by Karpenter, keeps its instance untouched; an instance whose karpenter.sh/nodeclaim
// tag names another NodeClaim is not adopted and its NodeClaim is not deleted.
func TestGarbageCollectionAdoptsKarpenterInstances(t *testing.T) {
	w := newWorld(t)
	a := w.provider(t, "uid-a")
	b := w.provider(t, "uid-b") // same cluster name, another cluster
	a.resolvedNodeClass(t)
	b.resolvedNodeClass(t)
	ctx := context.Background()
	launch := func(p *provider, name string) string {
		c, err := p.Create(ctx, claim(name, "m5.large"))
		if err != nil {
			t.Fatalf("Create(%s): %v", name, err)
		}
		return c.Status.ProviderID
	}
	a1, a2, a3, b1 := launch(a, "a-1"), launch(a, "a-2"), launch(a, "a-3"), launch(b, "b-1")
	id1, id2 := karpenterize(t, a, a1), karpenterize(t, a, a2)
	id3 := karpenterize(t, a, a3, ec2types.Tag{Key: awssdk.String("karpenter.sh/nodeclaim"), Value: awssdk.String("someone-else")})
	idB := karpenterize(t, b, b1)

	s, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	launched := w.clock.Now()
	var objs []client.Object
	for name, pid := range map[string]string{"a-1": a1, "a-2": a2, "a-3": a3} {
		objs = append(objs, test.NodeClaim(name, "default").ProviderID(pid).CreatedAt(launched).Launched(launched).Obj())
	}
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	rec := &deleteRecorder{CloudProvider: a.CloudProvider}
	events := record.NewFakeRecorder(10)
	gc := garbagecollection.NewController(deps.Deps{Client: kube, CloudProvider: rec, Clock: w.clock,
		Recorder: events, Metrics: metrics.NewForTest()})
	w.clock.Step(garbagecollection.LeakGracePeriod + time.Second)
	for pass := range 2 {
		if err := gc.Reconcile(ctx); err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
	}
	if len(rec.deleted) != 0 {
		t.Errorf("garbage collection terminated %v", rec.deleted)
	}
	left := &karpv1.NodeClaimList{}
	if err := kube.List(ctx, left); err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 3 {
		t.Errorf("%d NodeClaims left, want the 3 of the taken-over cluster", len(left.Items))
	}
	uid := func(p *provider, id string) string {
		for _, tag := range describe(t, p, id).Tags {
			if awssdk.ToString(tag.Key) == tags.ClusterUID {
				return awssdk.ToString(tag.Value)
			}
		}
		return ""
	}
	got := map[string]string{"a-1": uid(a, id1), "a-2": uid(a, id2), "a-3": uid(a, id3), "b-1": uid(b, idB)}
	want := map[string]string{"a-1": "uid-a", "a-2": "uid-a", "a-3": "", "b-1": ""}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("cluster-UID tags after the takeover (-want +got):\n%s", d)
	}
	for _, id := range []string{id1, id2, id3, idB} {
		if st := describe(t, a, id).State.Name; st != ec2types.InstanceStateNameRunning && st != ec2types.InstanceStateNamePending {
			t.Errorf("instance %s is %s", id, st)
		}
	}
	select {
	case e := <-events.Events:
		if want := "InstanceNotAdopted"; !contains(e, want) {
			t.Errorf("event %q, want %s", e, want)
		}
	default:
		t.Errorf("no event for the NodeClaim whose instance was not adopted")
	}
	// The adopted instances are the cluster's now: listed, and terminated when their NodeClaim goes.
	listed, err := a.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range listed {
		ids = append(ids, c.Status.ProviderID)
	}
	if d := cmp.Diff(sortedCopy(a1, a2), sortedCopy(ids...)); d != "" {
		t.Errorf("a lists (-want +got):\n%s", d)
	}
	if err := a.Delete(ctx, test.NodeClaim("a-1", "default").ProviderID(a1).Obj()); err != nil {
		t.Errorf("Delete(adopted a-1) = %v", err)
	}
	// b's Karpenter instance is never a's: a NodeClaim that names it in a (restored from a backup of b: no Node, and
	// younger than the instance) does not make a act on it.
	restored := test.NodeClaim("b-1", "default").ProviderID(b1).CreatedAt(w.clock.Now().Add(time.Hour)).NodeName("b-node").Obj()
	if err := a.Delete(ctx, restored); !cloudprovider.IsNotFound(err) {
		t.Errorf("a.Delete(b's instance) = %v, want NotFound", err)
	}
	if st := describe(t, b, idB).State.Name; st == ec2types.InstanceStateNameShuttingDown || st == ec2types.InstanceStateNameTerminated {
		t.Errorf("b's instance is %s", st)
	}
}

// TestDeleteAdoptsBeforeTerminating: a NodeClaim Karpenter launched and deleted before any garbage-collection pass
// adopted its instance still gets its instance terminated (not reported gone, which would leak it).
func TestDeleteAdoptsBeforeTerminating(t *testing.T) {
	w := newWorld(t)
	a := w.provider(t, "uid-a")
	a.resolvedNodeClass(t)
	ctx := context.Background()
	c, err := a.Create(ctx, claim("k-1", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	// A fresh provider, as after a restart: it has never seen the instance.
	fresh := w.provider(t, "uid-a")
	id := karpenterize(t, fresh, c.Status.ProviderID)
	if err := fresh.Delete(ctx, test.NodeClaim("k-1", "default").ProviderID(c.Status.ProviderID).CreatedAt(w.clock.Now()).Obj()); err != nil {
		t.Fatalf("Delete = %v, want the termination started", err)
	}
	if st := describe(t, fresh, id).State.Name; st != ec2types.InstanceStateNameShuttingDown {
		t.Errorf("instance is %s, want shutting-down", st)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func sortedCopy(v ...string) []string {
	out := slices.Clone(v)
	slices.Sort(out)
	return out
}

// TestAdoptionUnderThePolicy: the documented IAM policy lets the controller adopt an instance carrying the
// cluster's name and no UID (and its launch template), and nothing else: it cannot rewrite another cluster's UID.
func TestAdoptionUnderThePolicy(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	a := w.provider(t, "uid-a")
	b := w.provider(t, "uid-b")
	a.resolvedNodeClass(t)
	b.resolvedNodeClass(t)
	ca, err := a.Create(ctx, claim("a-1", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	cb, err := b.Create(ctx, claim("b-1", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	idA := karpenterize(t, a, ca.Status.ProviderID)
	lts, err := a.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, lt := range lts.LaunchTemplates {
		if tagOf(lt.Tags, tags.ClusterUID) == "uid-a" {
			if _, err := a.ec2.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{awssdk.ToString(lt.LaunchTemplateId)}, Tags: []ec2types.Tag{{Key: awssdk.String(tags.ClusterUID)}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.sim.SetIAMPolicy(readControllerPolicy(t), map[string]string{
		"CLUSTER_UID": "uid-a", "NODE_ROLE_NAME": "KarpenterNodeRole-dovetail",
	}); err != nil {
		t.Fatal(err)
	}
	fresh := w.provider(t, "uid-a")
	res, err := fresh.AdoptInstances(ctx, []*karpv1.NodeClaim{test.NodeClaim("a-1", "default").ProviderID(ca.Status.ProviderID).CreatedAt(w.clock.Now()).Obj()})
	if err != nil {
		t.Fatalf("AdoptInstances under the policy: %v", err)
	}
	if d := cmp.Diff([]string{ca.Status.ProviderID}, res.Adopted); d != "" {
		t.Errorf("adopted (-want +got):\n%s", d)
	}
	if got := tagOf(describe(t, fresh, idA).Tags, tags.ClusterUID); got != "uid-a" {
		t.Errorf("adopted instance's UID tag %q", got)
	}
	lts, err = a.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateIds: []string{tagOf(describe(t, fresh, idA).Tags, "aws:ec2launchtemplate:id")}})
	if err != nil || len(lts.LaunchTemplates) != 1 || tagOf(lts.LaunchTemplates[0].Tags, tags.ClusterUID) != "uid-a" {
		t.Errorf("the adopted instance's launch template: %v %+v", err, lts)
	}
	idB, _ := instance.ParseProviderID(cb.Status.ProviderID)
	if _, err := fresh.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{idB}, Tags: []ec2types.Tag{{Key: awssdk.String(tags.ClusterUID), Value: awssdk.String("uid-a")}}}); err == nil {
		t.Errorf("the policy let cluster a rewrite the UID tag of cluster b's instance")
	}
}

func tagOf(ts []ec2types.Tag, key string) string {
	for _, tag := range ts {
		if awssdk.ToString(tag.Key) == key {
			return awssdk.ToString(tag.Value)
		}
	}
	return ""
}

// TestAdoptionEvidence: a NodeClaim younger than its instance (created after the launch, beyond the clock skew
// allowed) names an instance of this cluster only if a Node of the cluster carries its provider ID: with the Node
// the instance is adopted, without it (a NodeClaim restored from another cluster's backup) it is refused.
func TestAdoptionEvidence(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	a := w.provider(t, "uid-a")
	a.resolvedNodeClass(t)
	launch := func(name string) string {
		c, err := a.Create(ctx, claim(name, "m5.large"))
		if err != nil {
			t.Fatal(err)
		}
		karpenterize(t, a, c.Status.ProviderID)
		return c.Status.ProviderID
	}
	registered, restored := launch("r-1"), launch("r-2")
	later := w.clock.Now().Add(time.Hour)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}, Spec: corev1.NodeSpec{ProviderID: registered}}
	fresh := w.provider(t, "uid-a", node)
	res, err := fresh.AdoptInstances(ctx, []*karpv1.NodeClaim{
		test.NodeClaim("r-1", "default").ProviderID(registered).CreatedAt(later).NodeName("node-1").Obj(),
		test.NodeClaim("r-2", "default").ProviderID(restored).CreatedAt(later).NodeName("node-2").Obj(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{registered}, res.Adopted); d != "" {
		t.Errorf("adopted (-want +got):\n%s", d)
	}
	if why := res.Refused[restored]; !strings.Contains(why, "no Node of this cluster") {
		t.Errorf("refusal of the restored NodeClaim's instance = %q", why)
	}
}
