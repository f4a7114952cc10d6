package provisioning

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	autoscalingv1beta1 "github.com/dovetail/dovetail/api/autoscaling/v1beta1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/capacitybuffer"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestBufferKeepsRoom drives the provisioner through a buffer's life on the fake cloud: a buffer of 4 × (1 cpu,
// 2Gi) gets NodeClaims of its own; a second pass finds the room and launches nothing; 4 real pods of the same
// shape are planned into that room (nominated there, no NodeClaim for them) and the buffer gets new NodeClaims;
// virtual pods never become API objects and get no events.
func TestBufferKeepsRoom(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme, autoscalingv1beta1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	tpl := test.PodTemplate("default", "shape", "1", "2Gi")
	cb := test.CapacityBuffer("default", "spare").PodTemplate("shape").Replicas(4).Obj()
	cb.Status = capacitybuffer.Resolved(cb, capacitybuffer.Source{Template: tpl.Template, PodTemplateName: "shape"}, metav1.Now())
	api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(test.NodePool("default").Obj(), tpl, cb).
		WithStatusSubresource(&autoscalingv1beta1.CapacityBuffer{}).Build()
	c, _ := newTestController(api)
	rec := record.NewFakeRecorder(100)
	c.deps.Recorder = rec
	c.deps.Buffers = deps.NewBuffers()
	c.deps.Buffers.Set("default/spare", capacitybuffer.VirtualPods(cb, tpl.Template))

	claims := func() []string {
		t.Helper()
		list := &karpv1.NodeClaimList{}
		if err := api.List(ctx, list); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, nc := range list.Items {
			names = append(names, nc.Name)
		}
		sort.Strings(names)
		return names
	}
	provisioning := func() string {
		t.Helper()
		got := &autoscalingv1beta1.CapacityBuffer{}
		if err := api.Get(ctx, client.ObjectKeyFromObject(cb), got); err != nil {
			t.Fatal(err)
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, autoscalingv1beta1.ConditionProvisioning)
		if cond == nil {
			return "none"
		}
		return string(cond.Status) + "/" + cond.Reason
	}
	pass := func() {
		t.Helper()
		if err := c.Schedule(ctx); err != nil {
			t.Fatal(err)
		}
		c.created = map[string]createdClaim{} // the fake client is the cache: it shows what was created
	}

	pass()
	room := claims()
	if len(room) == 0 {
		t.Fatal("no nodeclaim for the buffer")
	}
	if got := provisioning(); got != "False/RequiresNewCapacity" {
		t.Errorf("after the first pass: Provisioning %s, want False/RequiresNewCapacity", got)
	}
	pods := &corev1.PodList{}
	if err := api.List(ctx, pods); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("virtual pods became API objects: %d pods", len(pods.Items))
	}
	if n := len(rec.Events); n != 0 {
		t.Errorf("%d events for virtual pods: %s", n, <-rec.Events)
	}

	pass()
	if diff := cmp.Diff(room, claims()); diff != "" {
		t.Errorf("second pass launched again (-before +after):\n%s", diff)
	}
	if got := provisioning(); got != "True/FitsExistingCapacity" {
		t.Errorf("after the second pass: Provisioning %s, want True/FitsExistingCapacity", got)
	}

	for i := 0; i < 4; i++ {
		if err := api.Create(ctx, test.Pod(fmt.Sprintf("web-%d", i)).Requests("1", "2Gi").Unschedulable().Obj()); err != nil {
			t.Fatal(err)
		}
	}
	pass()
	after := claims()
	if len(after) <= len(room) {
		t.Errorf("the buffer was not provisioned again: nodeclaims %v, before %v", after, room)
	}
	var nominated []string
	for len(rec.Events) > 0 {
		e := <-rec.Events
		if strings.Contains(e, "capacity-buffer") {
			t.Errorf("event about a virtual pod: %s", e)
		}
		if strings.HasPrefix(e, "Normal Nominated") {
			nominated = append(nominated, e)
		}
	}
	if len(nominated) != 4 {
		t.Fatalf("%d nominations, want 4: %v", len(nominated), nominated)
	}
	for _, e := range nominated {
		if !containsAny(e, room) {
			t.Errorf("real pod not planned into the buffer's room %v: %s", room, e)
		}
	}
	if got := provisioning(); got != "False/RequiresNewCapacity" {
		t.Errorf("after the real pods: Provisioning %s, want False/RequiresNewCapacity", got)
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
