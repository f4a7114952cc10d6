package metrics

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/operator/index"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestNodeSeries: a count sums the requests of the pods bound to each node (terminal pods left out, DaemonSet
// pods also apart) and sets the cluster utilization and the cluster-state gauges.
func TestNodeSeries(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	node := test.Node("ip-1", "fake:///a/i-1").Label(karpv1.NodePoolLabelKey, "web").Capacity(corev1.ResourceCPU, "4").Obj()
	done := test.Pod("done").Requests("2", "1Gi").NodeName("ip-1").Phase(corev1.PodSucceeded).Obj()
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(node,
		test.Pod("app").Requests("1", "1Gi").NodeName("ip-1").Phase(corev1.PodRunning).Obj(),
		test.Pod("ds").Requests("500m", "100Mi").NodeName("ip-1").OwnedBy("apps/v1", "DaemonSet", "agent").Phase(corev1.PodRunning).Obj(),
		done, test.Pod("pending").Requests("8", "1Gi").Obj(),
	).Build()
	m := metrics.NewForTest()
	if err := NewController(deps.Deps{Client: kube, Metrics: m}).Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	scraped, err := testutil.CollectAndFormat(m.Nodes, expfmt.TypeTextPlain, "karpenter_nodes_total_pod_requests", "karpenter_nodes_total_daemon_requests", "karpenter_cluster_utilization_percent")
	if err != nil {
		t.Fatal(err)
	}
	body := string(scraped)
	for _, want := range []string{
		`managed="true",node_name="ip-1",nodepool="web",os="",phase="",placement_group_id="",placement_group_partition="",region="",resource_type="cpu",windows_build="",zone="",zone_id=""} 1.5`,
		`managed="true",node_name="ip-1",nodepool="web",os="",phase="",placement_group_id="",placement_group_partition="",region="",resource_type="cpu",windows_build="",zone="",zone_id=""} 0.5`,
		`karpenter_cluster_utilization_percent{resource_type="cpu"} 37.5`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %q in\n%s", want, body)
		}
	}
	if got := testutil.ToFloat64(m.ClusterStateSynced); got != 1 {
		t.Errorf("karpenter_cluster_state_synced = %v, want 1", got)
	}
}

// TestNodeSumsFollowPodChanges: a Node whose pods are as they were keeps its sums from the count before; a pod
// bound, deleted or finished changes them at the next count.
func TestNodeSumsFollowPodChanges(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	node := test.Node("ip-1", "fake:///a/i-1").Label(karpv1.NodePoolLabelKey, "web").Capacity(corev1.ResourceCPU, "4").Obj()
	app := test.Pod("app").Requests("1", "1Gi").NodeName("ip-1").Phase(corev1.PodRunning).Obj()
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(node, app).Build()
	m := metrics.NewForTest()
	c := NewController(deps.Deps{Client: kube, Metrics: m})
	cpu := func() string {
		t.Helper()
		if err := c.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		s := c.sums["ip-1"]
		q := s.requests[corev1.ResourceCPU]
		return q.String()
	}
	if got := cpu(); got != "1" {
		t.Fatalf("first count: %s cpu requested, want 1", got)
	}
	// Unchanged pods: the sums are kept, not added up again (a sentinel put in them stays).
	sentinel := c.sums["ip-1"]
	sentinel.requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("42")}
	c.sums["ip-1"] = sentinel
	if got := cpu(); got != "42" {
		t.Errorf("count with the same pods: %s cpu, want the kept sums (42)", got)
	}
	if err := kube.Create(ctx, test.Pod("web").Requests("2", "1Gi").NodeName("ip-1").Phase(corev1.PodRunning).Obj()); err != nil {
		t.Fatal(err)
	}
	if got := cpu(); got != "3" {
		t.Errorf("after a pod was bound: %s cpu, want 3", got)
	}
	app.Status.Phase = corev1.PodSucceeded
	if err := kube.Status().Update(ctx, app); err != nil {
		t.Fatal(err)
	}
	if got := cpu(); got != "2" {
		t.Errorf("after a pod finished: %s cpu, want 2", got)
	}
	if err := kube.Delete(ctx, test.Pod("web").Obj()); err != nil {
		t.Fatal(err)
	}
	if got := cpu(); got != "0" {
		t.Errorf("after the last pod was deleted: %s cpu, want 0", got)
	}
	if len(c.sums) != 0 {
		t.Errorf("sums kept for %d Nodes without pods, want none", len(c.sums))
	}
}

// TestCountSkippedWithoutChange: once watching, a count with no pod or Node change notified since the last one
// publishes nothing new (a change the informers did not report is not seen); a pod change, or a Node change to
// what the series read, makes the next count run; a Node heartbeat does not.
func TestCountSkippedWithoutChange(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	node := test.Node("ip-1", "fake:///a/i-1").Label(karpv1.NodePoolLabelKey, "web").Capacity(corev1.ResourceCPU, "4").Obj()
	app := test.Pod("app").Requests("1", "1Gi").NodeName("ip-1").Phase(corev1.PodRunning).Obj()
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(node, app).WithIndex(&corev1.Pod{}, index.PodNodeName, podNodeName).Build()
	informers := &informertest.FakeInformers{Scheme: scheme}
	c := NewController(deps.Deps{Client: kube, Metrics: metrics.NewForTest()})
	if err := c.Watch(ctx, informers); err != nil {
		t.Fatal(err)
	}
	pods, err := informers.FakeInformerFor(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := informers.FakeInformerFor(ctx, &corev1.Node{})
	if err != nil {
		t.Fatal(err)
	}
	cpu := func() string {
		t.Helper()
		if err := c.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		q := c.sums["ip-1"].requests[corev1.ResourceCPU]
		return q.String()
	}
	if got := cpu(); got != "1" {
		t.Fatalf("first count: %s cpu requested, want 1", got)
	}
	web := test.Pod("web").Requests("2", "1Gi").NodeName("ip-1").Phase(corev1.PodRunning).Obj()
	if err := kube.Create(ctx, web); err != nil {
		t.Fatal(err)
	}
	if got := cpu(); got != "1" {
		t.Errorf("no change notified: %s cpu, want the last count's 1", got)
	}
	pods.Add(web)
	if got := cpu(); got != "3" {
		t.Errorf("after the pod was notified: %s cpu, want 3", got)
	}
	if err := kube.Delete(ctx, web); err != nil {
		t.Fatal(err)
	}
	beat := node.DeepCopy()
	beat.ResourceVersion = "99"
	nodes.Update(node, beat)
	if got := cpu(); got != "3" {
		t.Errorf("after a heartbeat: %s cpu, want the last count's 3", got)
	}
	relabeled := node.DeepCopy()
	relabeled.Labels["team"] = "a"
	nodes.Update(node, relabeled)
	if got := cpu(); got != "1" {
		t.Errorf("after a Node label changed: %s cpu, want 1 (the deleted pod left out)", got)
	}
}

func podNodeName(o client.Object) []string {
	if n := o.(*corev1.Pod).Spec.NodeName; n != "" {
		return []string{n}
	}
	return nil
}

// TestRecountReadsMarkedNodes: once watching, a count reads again only the Nodes a notification named (a pod
// bound to it, moved off it, deleted; the Node added, relabeled or deleted); a notification naming no Node (a
// tombstone of an unknown kind) and a failed count make the next count read everything.
func TestRecountReadsMarkedNodes(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a := test.Node("ip-a", "fake:///a/i-a").Label(karpv1.NodePoolLabelKey, "web").Capacity(corev1.ResourceCPU, "4").Obj()
	b := test.Node("ip-b", "fake:///a/i-b").Label(karpv1.NodePoolLabelKey, "web").Capacity(corev1.ResourceCPU, "4").Obj()
	onA := test.Pod("on-a").Requests("1", "1Gi").NodeName("ip-a").Phase(corev1.PodRunning).Obj()
	onB := test.Pod("on-b").Requests("1", "1Gi").NodeName("ip-b").Phase(corev1.PodRunning).Obj()
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(a, b, onA, onB).WithIndex(&corev1.Pod{}, index.PodNodeName, podNodeName).Build()
	informers := &informertest.FakeInformers{Scheme: scheme}
	c := NewController(deps.Deps{Client: kube, Metrics: metrics.NewForTest()})
	if err := c.Watch(ctx, informers); err != nil {
		t.Fatal(err)
	}
	pods, err := informers.FakeInformerFor(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := informers.FakeInformerFor(ctx, &corev1.Node{})
	if err != nil {
		t.Fatal(err)
	}
	// cpu counts once and returns each Node's requested CPU ("-" for a Node without an entry).
	cpu := func() map[string]string {
		t.Helper()
		if err := c.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, name := range []string{"ip-a", "ip-b"} {
			if _, ok := c.entries[name]; !ok {
				out[name] = "-"
				continue
			}
			q := c.sums[name].requests[corev1.ResourceCPU]
			out[name] = q.String()
		}
		return out
	}
	check := func(step string, want map[string]string) {
		t.Helper()
		if diff := cmp.Diff(want, cpu()); diff != "" {
			t.Errorf("%s: requested CPU by Node (-want +got):\n%s", step, diff)
		}
	}
	check("first count", map[string]string{"ip-a": "1", "ip-b": "1"})

	// A pod bound to ip-b is notified; one bound to ip-a is not: only ip-b is read again.
	quiet := test.Pod("quiet").Requests("2", "1Gi").NodeName("ip-a").Phase(corev1.PodRunning).Obj()
	loud := test.Pod("loud").Requests("2", "1Gi").NodeName("ip-b").Phase(corev1.PodRunning).Obj()
	for _, p := range []*corev1.Pod{quiet, loud} {
		if err := kube.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	pods.Add(loud)
	check("a pod notified on ip-b", map[string]string{"ip-a": "1", "ip-b": "3"})

	// A pod moved from ip-b to ip-a (old and new versions notified): both Nodes are read again.
	moved := loud.DeepCopy()
	moved.Spec.NodeName = "ip-a"
	if err := kube.Update(ctx, moved); err != nil { // the fake client does not hold spec.nodeName immutable
		t.Fatal(err)
	}
	pods.Update(loud, moved)
	check("a pod moved from ip-b to ip-a", map[string]string{"ip-a": "5", "ip-b": "1"})

	// A resync (same resource version) reads nothing again.
	if err := kube.Delete(ctx, onB); err != nil {
		t.Fatal(err)
	}
	pods.Update(onB, onB)
	check("a resync", map[string]string{"ip-a": "5", "ip-b": "1"})
	pods.Delete(onB)
	check("a pod deletion notified", map[string]string{"ip-a": "5", "ip-b": "0"})

	// The Node deleted: its entry goes.
	if err := kube.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	nodes.Delete(b)
	check("ip-b deleted", map[string]string{"ip-a": "5", "ip-b": "-"})

	// A tombstone of an unknown kind names no Node: the next count reads everything.
	if err := kube.Delete(ctx, quiet); err != nil {
		t.Fatal(err)
	}
	c.podChanged(toolscache.DeletedFinalStateUnknown{Key: "default/unknown", Obj: "not a pod"}) // what the informer's handler gets
	check("a tombstone naming no Node", map[string]string{"ip-a": "3", "ip-b": "-"})
}
