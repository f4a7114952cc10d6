package disruption_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/capacitybuffer"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/disruption"
	core "github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/operator/index"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestBufferRoomIsNeeded: two empty, consolidatable nodes, one of which holds a CapacityBuffer's room (the
// provisioner placed 3 × 1 cpu buffer pods there). The node without buffer room is deleted as empty; the one
// with it is not (it is not empty, and nowhere else has room for the buffer once the other is gone).
func TestBufferRoomIsNeeded(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	scheme, err := test.NewScheme(karpv1.AddToScheme, corev1.AddToScheme, appsv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	np := test.NodePool("default").Obj()
	v := &disruption.View{Now: now, Nodes: map[string]*corev1.Node{}, NodePools: map[string]*karpv1.NodePool{"default": np}}
	for _, name := range []string{"a", "b"} {
		nc := test.NodeClaim("default-"+name, "default").ProviderID("fake:///" + name).NodeName("node-" + name).
			Initialized(now.Add(-time.Hour)).Consolidatable(now.Add(-time.Minute)).Obj()
		v.Claims = append(v.Claims, *nc)
		v.Nodes["node-"+name] = test.Node("node-"+name, "fake:///"+name).Ready(true).Offering("m5.xlarge", "us-west-2a", "on-demand").Obj()
	}
	tpl := test.PodTemplate("default", "shape", "1", "1Gi")
	cb := test.CapacityBuffer("default", "spare").PodTemplate("shape").Replicas(3).Obj()
	cb.Status = capacitybuffer.Resolved(cb, capacitybuffer.Source{Template: tpl.Template}, metav1.NewTime(now))
	buffers := deps.NewBuffers()
	buffers.SetRoom(map[string][]*corev1.Pod{"node-a": capacitybuffer.VirtualPods(cb, tpl.Template)})

	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(np).
		WithIndex(&corev1.Pod{}, index.PodNodeName, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).Build()
	d := deps.Deps{Client: kube, CloudProvider: fake.New(clocktesting.NewFakeClock(now)), Buffers: buffers}
	snap, err := disruption.BuildSnapshot(ctx, d, v)
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string]int{}
	for _, c := range snap.Candidates {
		pods[c.NodeClaim] = len(c.Pods)
	}
	if diff := cmp.Diff(map[string]int{"default-a": 3, "default-b": 0}, pods); diff != "" {
		t.Errorf("pods per candidate (-want +got):\n%s", diff)
	}
	res, err := core.Decide(ctx, snap, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, cmd := range res.Commands {
		for _, c := range cmd.Candidates {
			deleted = append(deleted, string(cmd.Reason)+"/"+c.NodeClaim)
		}
	}
	sort.Strings(deleted)
	if diff := cmp.Diff([]string{"Empty/default-b"}, deleted); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}

	// Without buffer room both nodes are empty.
	d.Buffers = nil
	snap, err = disruption.BuildSnapshot(ctx, d, v)
	if err != nil {
		t.Fatal(err)
	}
	res, err = core.Decide(ctx, snap, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, cmd := range res.Commands {
		n += len(cmd.Candidates)
	}
	if n != 2 {
		t.Errorf("without buffer room: %d nodes disrupted, want 2", n)
	}
}
