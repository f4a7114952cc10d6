package clusterinput

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/capacitybuffer"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/pkg/settings"
	"github.com/dovetail/dovetail/pkg/test"
)

// testDeps is what Build reads: c, the fake cloud provider with a fake clock, and settings.
func testDeps(c client.Client) deps.Deps {
	clk := clocktesting.NewFakeClock(time.Now())
	return deps.Deps{Client: c, CloudProvider: fake.New(clk), Clock: clk, Settings: &settings.Settings{}}
}

// pendingInput builds the input as the provisioner does: around the cluster's pending pods, with every pod and
// NodeClaim d.Client lists.
func pendingInput(ctx context.Context, d deps.Deps) (solver.Input, error) {
	pods, claims := &corev1.PodList{}, &karpv1.NodeClaimList{}
	if err := d.Client.List(ctx, pods); err != nil {
		return solver.Input{}, err
	}
	if err := d.Client.List(ctx, claims); err != nil {
		return solver.Input{}, err
	}
	var all, pending []*corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		all = append(all, p)
		if solver.IsProvisionable(p) {
			pending = append(pending, p)
		}
	}
	return Build(ctx, d, pending, all, claims.Items, pending)
}

// TestRealPodsByNode: an in-flight NodeClaim's node runs the pods bound to it that are not terminal, a pod being
// deleted included, and no CapacityBuffer virtual pod; no copies are made.
func TestRealPodsByNode(t *testing.T) {
	bound := func(name, node string) *corev1.Pod {
		p := test.Pod(name).Obj()
		p.Spec.NodeName = node
		return p
	}
	running, deleting, done, virtual, elsewhere, pending := bound("running", "n1"), bound("deleting", "n1"),
		bound("done", "n1"), bound("virtual", "n1"), bound("elsewhere", "n2"), test.Pod("pending").Obj()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)}
	done.Status.Phase = corev1.PodSucceeded
	virtual.Annotations = map[string]string{capacitybuffer.VirtualPodAnnotation: "true"}
	got := realPodsByNode([]*corev1.Pod{running, deleting, done, virtual, elsewhere, pending})
	want := map[string][]*corev1.Pod{"n1": {running, deleting}, "n2": {elsewhere}}
	if len(got) != len(want) {
		t.Fatalf("nodes %v, want %v", slices.Collect(maps.Keys(got)), slices.Collect(maps.Keys(want)))
	}
	for node, pods := range want {
		if !slices.Equal(got[node], pods) {
			t.Errorf("pods on %s: %d, want the %d given (the same objects)", node, len(got[node]), len(pods))
		}
	}
}

// TestLeastAllocatableMemo: the least allocatable of an unlaunched NodeClaim is worked out once for a NodePool and
// set of requirements, and equals minAllocatable's; another set, or the same set in another NodePool, is worked
// out on its own.
func TestLeastAllocatableMemo(t *testing.T) {
	its := fake.DefaultInstanceTypes()
	claim := func(pool string, types ...string) *karpv1.NodeClaim {
		return test.NodeClaim("c", pool).Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, types...).Obj()
	}
	m := &allocatableMemo{byType: map[*cloudprovider.InstanceType]corev1.ResourceList{}, byRequirements: map[string]corev1.ResourceList{}}
	names := make([]string, 0, len(its))
	for _, it := range its {
		names = append(names, it.Name)
	}
	all, large := claim("a", names...), claim("a", "fake-xlarge")
	for _, tc := range []struct {
		name string
		nc   *karpv1.NodeClaim
		want int // requirement sets worked out so far
	}{
		{"every type", all, 1},
		{"every type again", claim("a", names...), 1},
		{"one type", large, 2},
		{"every type in another pool", claim("b", names...), 3},
	} {
		got := m.least(tc.nc, its)
		if want := minAllocatable(tc.nc, its, nil); !maps.EqualFunc(got, want, func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }) {
			t.Errorf("%s: least %v, want minAllocatable's %v", tc.name, got, want)
		}
		if len(m.byRequirements) != tc.want {
			t.Errorf("%s: %d requirement sets worked out, want %d", tc.name, len(m.byRequirements), tc.want)
		}
	}
	if cpu, least := m.least(large, its)[corev1.ResourceCPU], m.least(all, its)[corev1.ResourceCPU]; cpu.Cmp(least) <= 0 {
		t.Errorf("the largest type's cpu %s is not above the least of every type's %s: the sets were mixed up", cpu.String(), least.String())
	}
}
