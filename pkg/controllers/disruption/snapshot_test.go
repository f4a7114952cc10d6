package disruption_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/disruption"
	"github.com/dovetail/dovetail/pkg/operator/index"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestSnapshotLeavesStaticNodePoolsOut: the nodes of a static NodePool are no disruption candidates (neither
// consolidation nor the disruption controller's drift touches them), while they still count towards their
// NodePool's node count.
func TestSnapshotLeavesStaticNodePoolsOut(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	scheme, err := test.NewScheme(karpv1.AddToScheme, corev1.AddToScheme, appsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	v := &disruption.View{Now: now, Nodes: map[string]*corev1.Node{}, NodePools: map[string]*karpv1.NodePool{
		"dynamic": test.NodePool("dynamic").Obj(),
		"static":  test.NodePool("static").Replicas(1).Obj(),
	}}
	for _, pool := range []string{"dynamic", "static"} {
		nc := test.NodeClaim(pool+"-a", pool).ProviderID("fake:///"+pool).NodeName(pool+"-node").Initialized(now).
			Drifted(karpv1.ReasonNodePoolDrifted, now).Obj()
		v.Claims = append(v.Claims, *nc)
		v.Nodes[pool+"-node"] = test.Node(pool+"-node", "fake:///"+pool).Ready(true).Obj()
	}
	kube := clientfake.NewClientBuilder().WithScheme(scheme).Build()
	snap, err := disruption.BuildSnapshot(ctx, deps.Deps{Client: kube, CloudProvider: fake.New(clocktesting.NewFakeClock(now))}, v)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range snap.Candidates {
		got = append(got, c.NodeClaim)
	}
	if diff := cmp.Diff([]string{"dynamic-a"}, got); diff != "" {
		t.Errorf("candidates (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"dynamic": 1, "static": 1}, snap.NodeCounts); diff != "" {
		t.Errorf("node counts (-want +got):\n%s", diff)
	}
}

// TestSnapshotKeepsPodsOffSurplusNodeClaims: an empty NodeClaim the provisioner found surplus (its pods went
// elsewhere; it deletes it once its grace ends) takes no pods in the decision's simulations, while one it does not
// still does: a drift command planned its pods onto such a NodeClaim, deleted a second later, and its pods had no
// room.
func TestSnapshotKeepsPodsOffSurplusNodeClaims(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	scheme, err := test.NewScheme(karpv1.AddToScheme, corev1.AddToScheme, appsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	v := &disruption.View{Now: now, Nodes: map[string]*corev1.Node{}, NodePools: map[string]*karpv1.NodePool{
		"default": test.NodePool("default").Obj(),
	}}
	for _, name := range []string{"busy", "surplus", "spare"} {
		nc := test.NodeClaim(name, "default").ProviderID("fake:///" + name).NodeName(name + "-node").Initialized(now).Obj()
		v.Claims = append(v.Claims, *nc)
		v.Nodes[name+"-node"] = test.Node(name+"-node", "fake:///"+name).Ready(true).Obj()
	}
	v.Pods = []*corev1.Pod{test.Pod("web").Requests("1", "1Gi").Running("busy-node").Obj()}
	plans := deps.NewPlans()
	plans.SetSurplus([]string{"surplus"})
	objs := []client.Object{v.NodePools["default"], v.Pods[0]}
	for i := range v.Claims {
		objs = append(objs, &v.Claims[i], v.Nodes[v.Claims[i].Status.NodeName])
	}
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&corev1.Pod{}, index.PodNodeName, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).Build()
	snap, err := disruption.BuildSnapshot(ctx, deps.Deps{Client: kube, CloudProvider: fake.New(clocktesting.NewFakeClock(now)), Plans: plans}, v)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, n := range snap.Cluster.Nodes {
		got[n.Name] = n.MarkedForDeletion
	}
	want := map[string]bool{"busy-node": false, "surplus-node": true, "spare-node": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("nodes marked for deletion (-want +got):\n%s", diff)
	}
}
