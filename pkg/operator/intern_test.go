package operator

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/test"
)

// replicaPod is the i-th pod of fullPod's Deployment, decoded on its own as the informer does: nothing shared
// with the other replicas.
func replicaPod(i int, node string) *corev1.Pod {
	p := fullPod().DeepCopy() // fullPod's containers share one requests map
	// Decoded strings have data of their own (literals would share theirs).
	p.Name, p.UID, p.Spec.NodeName = fmt.Sprintf("web-%d", i), types.UID(fmt.Sprintf("uid-%d", i)), strings.Clone(node)
	p.Namespace = strings.Clone(p.Namespace)
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)})
	return p
}

func sameMap(a, b any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// Pods of one Deployment share one copy of what they hold alike, and each still reads as before.
func TestCacheTransformSharesRepeatedValues(t *testing.T) {
	transform := NewCacheTransform()
	var got []*corev1.Pod
	for i := range 3 {
		out, err := transform(replicaPod(i, "node-a"))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, out.(*corev1.Pod))
	}
	for i, p := range got {
		want, err := TransformForCache(replicaPod(i, "node-a"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, p); diff != "" {
			t.Errorf("pod %d differs from the trimmed pod (-want +got):\n%s", i, diff)
		}
	}
	a, b := got[0], got[2]
	checks := []struct {
		what string
		same bool
	}{
		{"labels", sameMap(a.Labels, b.Labels)},
		{"annotations", sameMap(a.Annotations, b.Annotations)},
		{"node selector", sameMap(a.Spec.NodeSelector, b.Spec.NodeSelector)},
		{"requests", sameMap(a.Spec.Containers[0].Resources.Requests, b.Spec.Containers[0].Resources.Requests)},
		{"requests of the init container and the container", sameMap(a.Spec.InitContainers[0].Resources.Requests, b.Spec.Containers[0].Resources.Requests)},
		{"overhead", sameMap(a.Spec.Overhead, b.Spec.Overhead)},
		{"containers", &a.Spec.Containers[0] == &b.Spec.Containers[0]},
		{"init containers", &a.Spec.InitContainers[0] == &b.Spec.InitContainers[0]},
		{"owner references", &a.OwnerReferences[0] == &b.OwnerReferences[0]},
		{"tolerations", &a.Spec.Tolerations[0] == &b.Spec.Tolerations[0]},
		{"spread constraints", &a.Spec.TopologySpreadConstraints[0] == &b.Spec.TopologySpreadConstraints[0]},
		{"affinity", a.Spec.Affinity == b.Spec.Affinity},
		{"namespace", unsafe.StringData(a.Namespace) == unsafe.StringData(b.Namespace)},
		{"node name", unsafe.StringData(a.Spec.NodeName) == unsafe.StringData(b.Spec.NodeName)},
	}
	for _, c := range checks {
		if !c.same {
			t.Errorf("%s: each pod holds its own copy", c.what)
		}
	}
	if a.Name == b.Name || a.UID == b.UID {
		t.Errorf("pods share their name or UID: %s/%s, %s/%s", a.Name, a.UID, b.Name, b.UID)
	}
}

// Values that differ are never shared: other requests, other tolerations, another node.
func TestCacheTransformKeepsDifferentValuesApart(t *testing.T) {
	transform := NewCacheTransform()
	a := replicaPod(0, "node-a")
	b := replicaPod(1, "node-b")
	b.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("360m"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	b.Spec.Tolerations[0].Key = "other"
	b.Labels = map[string]string{"app": "web", "tier": "front"}
	// Finer than a thousandth: kept exact, not shared with the 1m of another pod.
	c := replicaPod(2, "node-a")
	c.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.0001")}
	d := replicaPod(3, "node-a")
	d.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")}
	for _, p := range []*corev1.Pod{a, b, c, d} {
		if _, err := transform(p); err != nil {
			t.Fatal(err)
		}
	}
	if &a.Spec.Containers[0] == &b.Spec.Containers[0] || &c.Spec.Containers[0] == &d.Spec.Containers[0] {
		t.Errorf("pods with other requests share their containers")
	}
	if b.Spec.NodeName != "node-b" || b.Spec.Tolerations[0].Key != "other" || len(b.Labels) != 2 {
		t.Errorf("pod b took pod a's values: node %q, tolerations %v, labels %v", b.Spec.NodeName, b.Spec.Tolerations, b.Labels)
	}
	if q := b.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.MilliValue() != 360 {
		t.Errorf("pod b requests %s cpu, want 360m", q.String())
	}
	if q := c.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.Cmp(resource.MustParse("0.0001")) != 0 {
		t.Errorf("pod c requests %s cpu, want 0.0001", q.String())
	}
	if q := d.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.Cmp(resource.MustParse("1m")) != 0 {
		t.Errorf("pod d requests %s cpu, want 1m", q.String())
	}
}

// Nodes of one instance type share their capacity and allocatable; their labels keep their own values.
func TestCacheTransformSharesNodeResources(t *testing.T) {
	transform := NewCacheTransform()
	node := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelInstanceTypeStable: "m5.xlarge"}},
			Status: corev1.NodeStatus{
				Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")},
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3920m"), corev1.ResourceMemory: resource.MustParse("14Gi")},
			}}
	}
	var got []*corev1.Node
	for _, name := range []string{"a", "b"} {
		out, err := transform(node(name))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, out.(*corev1.Node))
	}
	for i, name := range []string{"a", "b"} {
		if diff := cmp.Diff(node(name), got[i]); diff != "" {
			t.Errorf("node %s (-want +got):\n%s", name, diff)
		}
	}
	if !sameMap(got[0].Status.Allocatable, got[1].Status.Allocatable) || !sameMap(got[0].Status.Capacity, got[1].Status.Capacity) {
		t.Errorf("nodes of one instance type hold their own capacity and allocatable")
	}
}

// Informers transform on their own goroutines: one transform serves them all (run with -race).
func TestCacheTransformConcurrentUse(t *testing.T) {
	transform := NewCacheTransform()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if _, err := transform(replicaPod(g*100+i, fmt.Sprintf("node-%d", i%3))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// A table holds at most internLimit values: past it, it starts again and still returns equal values.
func TestInternerTableIsBounded(t *testing.T) {
	in := newInterner()
	first := in.string(string([]byte("node-0")))
	for i := range internLimit + 10 {
		if got, want := in.string(fmt.Sprintf("node-%d", i)), fmt.Sprintf("node-%d", i); got != want {
			t.Fatalf("string %q, want %q", got, want)
		}
	}
	if n := len(in.strings.m); n > internLimit {
		t.Errorf("%d strings held, want at most %d", n, internLimit)
	}
	if first != "node-0" {
		t.Errorf("a value handed out before changed: %q", first)
	}
}

// NodeClaims of one NodePool and offering share their labels, requirements, taints, class reference and
// resources, and each still reads as before.
func TestCacheTransformSharesNodeClaimValues(t *testing.T) {
	at := time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC)
	claim := func(name, node string) *karpv1.NodeClaim {
		nc := test.NodeClaim(name, "web").Label(corev1.LabelInstanceTypeStable, "m5.xlarge").Label(karpv1.CapacityTypeLabelKey, "on-demand").
			Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.xlarge").
			Taint("dedicated", "web", corev1.TaintEffectNoSchedule).NodePoolHash("123", "v3").
			Requests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3600m")}).NodeName(node).Initialized(at).Obj()
		nc.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")}
		nc.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3920m"), corev1.ResourceMemory: resource.MustParse("14Gi")}
		return nc
	}
	transform := NewCacheTransform()
	var got []*karpv1.NodeClaim
	for i, node := range []string{"ip-10-0-0-1", "ip-10-0-0-2"} {
		out, err := transform(claim(fmt.Sprintf("web-%d", i), strings.Clone(node)))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, out.(*karpv1.NodeClaim))
	}
	for i, node := range []string{"ip-10-0-0-1", "ip-10-0-0-2"} {
		if diff := cmp.Diff(claim(fmt.Sprintf("web-%d", i), node), got[i]); diff != "" {
			t.Errorf("nodeclaim %d (-want +got):\n%s", i, diff)
		}
	}
	a, b := got[0], got[1]
	checks := []struct {
		what string
		same bool
	}{
		{"labels", sameMap(a.Labels, b.Labels)},
		// Annotations are not shared: each NodeClaim's planned-pods list is its own.
		{"requirements", &a.Spec.Requirements[0] == &b.Spec.Requirements[0]},
		{"taints", &a.Spec.Taints[0] == &b.Spec.Taints[0]},
		{"node class reference", a.Spec.NodeClassRef == b.Spec.NodeClassRef},
		{"requests", sameMap(a.Spec.Resources.Requests, b.Spec.Resources.Requests)},
		{"capacity", sameMap(a.Status.Capacity, b.Status.Capacity)},
		{"allocatable", sameMap(a.Status.Allocatable, b.Status.Allocatable)},
	}
	for _, c := range checks {
		if !c.same {
			t.Errorf("%s: each NodeClaim holds its own copy", c.what)
		}
	}
	if a.Status.NodeName == b.Status.NodeName {
		t.Errorf("NodeClaims share their node name %q", a.Status.NodeName)
	}
}
