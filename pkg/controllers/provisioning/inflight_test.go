package provisioning

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/operator/index"
	"github.com/dovetail/dovetail/pkg/test"
)

// registeringProviderID is the instance of registeringClaim.
const registeringProviderID = "fake:///test-zone-a/i-registering"

// registeringClaim is a NodeClaim launched with room for 2 cpu and 8Gi, whose Node has not registered yet.
func registeringClaim() *karpv1.NodeClaim {
	nc := test.NodeClaim("registering", "default").ProviderID(registeringProviderID).Launched(metav1.Now().Time).Obj()
	nc.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	nc.Status.Capacity = nc.Status.Allocatable.DeepCopy()
	return nc
}

// TestPodsBoundBeforeTheCacheShowsRegistration: registration writes the Node (karpenter.sh/registered=true, the
// unregistered taint lifted) before the NodeClaim's status.nodeName, and the kube-scheduler may bind pods to the
// Node in between. A pass that sees such a Node while the NodeClaim shows no status.nodeName yet must count the
// pods bound there, for room and for topology: in a 1,000-pod hostname-spread scale-out the last pods were
// planned, pass after pass, on room such pods had taken, and got their nodes 40-100 s late. Before registration
// wrote the Node (no label, no pod but a DaemonSet's bound), the NodeClaim stands for it.
func TestPodsBoundBeforeTheCacheShowsRegistration(t *testing.T) {
	antiAffine := func(b *test.PodBuilder) *corev1.Pod {
		p := b.Obj()
		p.Labels = map[string]string{"app": "apart"}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey:   corev1.LabelHostname,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "apart"}},
			}},
		}}
		return p
	}
	for _, tc := range []struct {
		name string
		// written: registration has written the Node (label karpenter.sh/registered=true).
		written      bool
		bound        *corev1.Pod
		pending      *corev1.Pod
		wantNewClaim bool
	}{
		{name: "the bound pod took the room", written: true,
			bound: test.Pod("bound").Requests("1500m", "1Gi").Obj(), pending: test.Pod("pending").Requests("1500m", "1Gi").Unschedulable().Obj(),
			wantNewClaim: true},
		{name: "room is left beside the bound pod", written: true,
			bound: test.Pod("bound").Requests("500m", "1Gi").Obj(), pending: test.Pod("pending").Requests("500m", "1Gi").Unschedulable().Obj()},
		{name: "the bound pod repels the pending one", written: true,
			bound: antiAffine(test.Pod("bound").Requests("100m", "128Mi")), pending: antiAffine(test.Pod("pending").Requests("100m", "128Mi").Unschedulable()),
			wantNewClaim: true},
		{name: "the cache shows the binding before the node's registration",
			bound: test.Pod("bound").Requests("1500m", "1Gi").Obj(), pending: test.Pod("pending").Requests("1500m", "1Gi").Unschedulable().Obj(),
			wantNewClaim: true},
		{name: "registration has not written the node: its NodeClaim stands for it",
			bound: test.Pod("daemon").Requests("100m", "128Mi").OwnedBy("apps/v1", "DaemonSet", "agent").Obj(),
			// Not on the Node as the cache shows it: registration copies the NodePool label there.
			pending: test.Pod("pending").Requests("500m", "1Gi").NodeSelector(karpv1.NodePoolLabelKey, "default").Unschedulable().Obj()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			scheme, err := test.NewScheme(karpv1.AddToScheme)
			if err != nil {
				t.Fatal(err)
			}
			nc := registeringClaim()
			nb := test.Node("registering-node", registeringProviderID).Ready(true).Capacity(corev1.ResourceCPU, "2").
				Capacity(corev1.ResourceMemory, "8Gi")
			if tc.written {
				nb = nb.Label(karpv1.NodeRegisteredLabelKey, "true").Label(karpv1.NodePoolLabelKey, "default")
			}
			node := nb.Obj()
			bound := tc.bound
			bound.Spec.NodeName = node.Name
			bound.Status.Phase = corev1.PodRunning
			pending := tc.pending
			api := clientfake.NewClientBuilder().WithScheme(scheme).
				WithObjects(test.NodePool("default").Obj(), nc, node, bound, pending).
				WithStatusSubresource(&karpv1.NodeClaim{}, &corev1.Pod{}).
				WithIndex(&corev1.Pod{}, index.PodNodeName, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
				Build()
			c, _ := newTestController(api)
			if err := c.Schedule(ctx); err != nil {
				t.Fatal(err)
			}
			list := &karpv1.NodeClaimList{}
			if err := api.List(ctx, list); err != nil {
				t.Fatal(err)
			}
			want := 1
			if tc.wantNewClaim {
				want = 2
			}
			if len(list.Items) != want {
				t.Errorf("%d NodeClaims after the pass, want %d", len(list.Items), want)
			}
		})
	}
}

// TestOneNominatedEventAcrossRegistration: a pod planned on an in-flight NodeClaim is announced once; when the
// NodeClaim's Node registers and the pod is planned there, it is the same plan, and no second Nominated event
// is written (events are API writes: a 1,000-node scale-out wrote one more a pod).
func TestOneNominatedEventAcrossRegistration(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	nc := registeringClaim()
	pending := test.Pod("pending").Requests("500m", "1Gi").Unschedulable().Obj()
	api := clientfake.NewClientBuilder().WithScheme(scheme).
		WithObjects(test.NodePool("default").Obj(), nc, pending).
		WithStatusSubresource(&karpv1.NodeClaim{}, &corev1.Pod{}).
		WithIndex(&corev1.Pod{}, index.PodNodeName, func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		Build()
	c, _ := newTestController(api)
	rec := c.deps.Recorder.(*record.FakeRecorder)
	nominated := func() []string {
		var out []string
		for len(rec.Events) > 0 {
			if e := <-rec.Events; strings.Contains(e, "Nominated") {
				out = append(out, e)
			}
		}
		return out
	}
	if err := c.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Normal Nominated Pod should schedule on: nodeclaim/registering"}, nominated()); diff != "" {
		t.Fatalf("first pass (-want +got):\n%s", diff)
	}
	// Registration: the Node joins and the NodeClaim records it.
	node := test.Node("registering-node", registeringProviderID).Ready(true).Capacity(corev1.ResourceCPU, "2").
		Capacity(corev1.ResourceMemory, "8Gi").Label(karpv1.NodeRegisteredLabelKey, "true").
		Label(karpv1.NodePoolLabelKey, "default").Obj()
	if err := api.Create(ctx, node); err != nil {
		t.Fatal(err)
	}
	registered := &karpv1.NodeClaim{}
	if err := api.Get(ctx, client.ObjectKeyFromObject(nc), registered); err != nil {
		t.Fatal(err)
	}
	registered.Status.NodeName = node.Name
	registered.SetTrue(karpv1.ConditionTypeRegistered, karpv1.ReasonRegistered)
	if err := api.Status().Update(ctx, registered); err != nil {
		t.Fatal(err)
	}
	if err := c.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	if got := nominated(); len(got) != 0 {
		t.Errorf("the same plan announced again after registration: %v", got)
	}
	list := &karpv1.NodeClaimList{}
	if err := api.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Errorf("%d NodeClaims after the passes, want 1 (the pod is planned on the registered node)", len(list.Items))
	}
}
