package disruption_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/disruption"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/test"
)

// serviceNode creates an initialized NodeClaim of NodePool "default" and its Node of cpu cores (see clusterNode),
// and binds a running pod of each size in pods (cores) to it, named name-0, name-1, ...
func serviceNode(t *testing.T, e *test.ControllerEnv, name, cpu string, pods ...string) {
	t.Helper()
	clusterNode(t, e, name, cpu, "256Gi", nil)
	for i, size := range pods {
		bindPod(t, e, fmt.Sprintf("%s-%d", name, i), size, name)
	}
}

// clusterNode creates an initialized NodeClaim of NodePool "default" (with the termination finalizer, so that a
// deleted one stays, being deleted) and its Ready, untainted Node of cpu cores and memory; conditions are set true
// on the NodeClaim beside the readiness ones (type to reason, e.g. Drifted). It waits until the cache shows both.
func clusterNode(t *testing.T, e *test.ControllerEnv, name, cpu, memory string, conditions map[string]string) {
	t.Helper()
	ctx := context.Background()
	c := e.Env.Client
	labels := map[string]string{
		corev1.LabelInstanceTypeStable: "fake-xlarge", corev1.LabelTopologyZone: "test-zone-a",
		karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand, karpv1.NodePoolLabelKey: "default",
	}
	nb := test.NodeClaim(name, "default").Finalizer(karpv1.TerminationFinalizer).ProviderID("fake:///" + name)
	node := test.Node(name, "fake:///"+name).Ready(true).Capacity(corev1.ResourceCPU, cpu).Capacity(corev1.ResourceMemory, memory)
	for k, v := range labels {
		nb.Label(k, v)
		node.Label(k, v)
	}
	nc := nb.Obj()
	if err := c.Create(ctx, nc); err != nil {
		t.Fatal(err)
	}
	nc.Status.NodeName, nc.Status.ProviderID = name, "fake:///"+name
	for _, ct := range karpv1.NodeClaimReadinessConditions() {
		nc.SetTrue(ct, ct)
	}
	for ct, reason := range conditions {
		nc.SetTrue(ct, reason)
	}
	if err := c.Status().Update(ctx, nc); err != nil {
		t.Fatal(err)
	}
	createNode(t, c, node.Obj())
	test.Eventually(t, wait, func() (bool, string) {
		got := &karpv1.NodeClaim{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, got); err != nil {
			return false, fmt.Sprintf("nodeclaim %s not cached yet: %v", name, err)
		}
		for _, ct := range append(karpv1.NodeClaimReadinessConditions(), slices.Collect(maps.Keys(conditions))...) {
			if !got.IsTrue(ct) {
				return false, fmt.Sprintf("nodeclaim %s cached without %s yet", name, ct)
			}
		}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, &corev1.Node{}); err != nil {
			return false, fmt.Sprintf("node %s not cached yet: %v", name, err)
		}
		return true, ""
	})
}

// bindPod creates a running pod of cpu cores bound to node and waits until the cache shows it.
func bindPod(t *testing.T, e *test.ControllerEnv, name, cpu, node string) {
	t.Helper()
	ctx := context.Background()
	p := test.SchedPod(name).Requests(cpu, "1Gi").Obj()
	p.Spec.NodeName = node
	if err := e.Env.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	if err := e.Env.Client.Status().Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	test.Eventually(t, wait, func() (bool, string) {
		got := &corev1.Pod{}
		err := e.Client.Get(ctx, client.ObjectKeyFromObject(p), got)
		return err == nil && got.Status.Phase == corev1.PodRunning, fmt.Sprintf("pod %s not cached yet: %v", name, err)
	})
}

// movePods stands in for a drain and the kube-scheduler: the pods of each node in from are deleted and created
// again (named with a suffix) on node to.
func movePods(t *testing.T, e *test.ControllerEnv, from []string, to string) {
	t.Helper()
	ctx := context.Background()
	for _, node := range from {
		pods := &corev1.PodList{}
		if err := e.Env.Client.List(ctx, pods, client.MatchingFields{"spec.nodeName": node}); err != nil {
			t.Fatal(err)
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if err := e.Env.Client.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
				t.Fatal(err)
			}
			bindPod(t, e, p.Name+"-moved", p.Spec.Containers[0].Resources.Requests.Cpu().String(), to)
			test.Eventually(t, wait, func() (bool, string) {
				err := e.Client.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{})
				return client.IgnoreNotFound(err) == nil && err != nil, fmt.Sprintf("pod %s still cached", p.Name)
			})
		}
	}
}

// startCommand records a command to delete the named NodeClaims, as a pass that stopped right after recording
// it leaves it.
func startCommand(t *testing.T, e *test.ControllerEnv, id string, names []string) {
	t.Helper()
	ctx := context.Background()
	raw, err := json.Marshal(disruption.Record{ID: id, Reason: karpv1.DisruptionReasonUnderutilized, Decision: "delete",
		ConsolidationType: "multi", Started: e.Clock.Now().UTC(), Candidates: len(names)})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		nc := &karpv1.NodeClaim{}
		if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(nc.DeepCopy())
		nc.Annotations = map[string]string{disruption.CommandAnnotationKey: string(raw)}
		if err := e.Env.Client.Patch(ctx, nc, patch); err != nil {
			t.Fatal(err)
		}
	}
	test.Eventually(t, wait, func() (bool, string) {
		for _, name := range names {
			if recordID(t, e, name) != id {
				return false, "record not on " + name
			}
		}
		cached := &karpv1.NodeClaimList{}
		if err := e.Client.List(ctx, cached); err != nil {
			return false, err.Error()
		}
		n := 0
		for i := range cached.Items {
			if r, ok, err := disruption.RecordOf(&cached.Items[i]); ok && err == nil && r.ID == id {
				n++
			}
		}
		return n == len(names), fmt.Sprintf("%d of %d records cached", n, len(names))
	})
}

// deleting returns the names of the NodeClaims being deleted, sorted.
func deleting(t *testing.T, e *test.ControllerEnv) []string {
	t.Helper()
	l := &karpv1.NodeClaimList{}
	if err := e.Env.Client.List(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := range l.Items {
		if !l.Items[i].DeletionTimestamp.IsZero() {
			out = append(out, l.Items[i].Name)
		}
	}
	sort.Strings(out)
	return out
}

// waveCluster is the scene of the wave tests: NodePool "default" with a budget of 0 (the passes start no
// command of their own), a "keeper" node of 64 cores, and twelve candidates c00..c11 of 8 cores with one pod
// each of 0.5, 1, ..., 6 cores, recorded as one command to delete them all. It returns the candidates.
func waveCluster(t *testing.T, e *test.ControllerEnv) []string {
	t.Helper()
	if err := e.Env.Client.Create(context.Background(), test.NodePool("default").Budget("0").Obj()); err != nil {
		t.Fatal(err)
	}
	serviceNode(t, e, "keeper", "64")
	var names []string
	for i := range 12 {
		name := fmt.Sprintf("c%02d", i)
		serviceNode(t, e, name, "8", fmt.Sprintf("%dm", 500*(i+1)))
		names = append(names, name)
	}
	startCommand(t, e, "waves", names)
	return names
}

// TestCandidatesDrainInWaves: a command deleting twelve nodes deletes the eight holding the largest pods first
// (a wave is at least MinDrainWave), deletes nothing more while their pods are still on them, and deletes the
// other four once those pods have moved and the rest still fit beside them.
func TestCandidatesDrainInWaves(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	names := waveCluster(t, e)
	ctrl := disruption.NewController(e.Deps)
	first := names[4:]
	// The second pass sees the deletions; the first wave's pods have not moved yet.
	for pass := range 2 {
		passDeletesFirstWave(t, e, ctrl, names, pass)
	}
	movePods(t, e, first, "keeper")
	e.Clock.Step(disruption.BusyPollPeriod)
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := deleting(t, e); !slices.Equal(got, names) {
		t.Fatalf("after the first wave drained, deleting %v, want all of %v", got, names)
	}
}

// TestWavesGoOnWithWhatStillFits: after the first wave drained, the room the plan counted on is taken (the
// kube-scheduler put another pod there), so not all of the other candidates' pods fit any more. At once (no
// ValidationTimeout wait) the candidates whose pods still fit are deleted and the others leave the command and stay
// in service, untainted; when none fit, the rest of the command is abandoned.
func TestWavesGoOnWithWhatStillFits(t *testing.T) {
	// The rest of the command: c00..c03 with pods of 0.5, 1, 1.5 and 2 cores.
	cores := map[string]float64{"c00": 0.5, "c01": 1, "c02": 1.5, "c03": 2}
	for _, tc := range []struct {
		name string
		// hog is the pod put on the keeper after the first wave's 34 cores moved there; free is what it leaves.
		hog  string
		free float64
	}{
		{name: "some fit", hog: "28", free: 2},
		{name: "none fit", hog: "30", free: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := test.StartControllerEnv(t)
			ctx := context.Background()
			names := waveCluster(t, e)
			ctrl := disruption.NewController(e.Deps)
			passDeletesFirstWave(t, e, ctrl, names, 0)
			first, rest := names[4:], names[:4]
			movePods(t, e, first, "keeper")
			bindPod(t, e, "hog", tc.hog, "keeper")
			e.Clock.Step(disruption.BusyPollPeriod)
			if err := ctrl.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			got := deleting(t, e)
			if !isSubset(first, got) {
				t.Fatalf("deleting %v, which lacks the first wave %v", got, first)
			}
			var deleted, released []string
			moved := 0.0
			for _, name := range rest {
				if slices.Contains(got, name) {
					deleted = append(deleted, name)
					moved += cores[name]
					continue
				}
				released = append(released, name)
				if id := recordID(t, e, name); id != "" {
					t.Errorf("%s still carries command %s, although it is not being deleted", name, id)
				}
				node := &corev1.Node{}
				if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
					t.Fatal(err)
				}
				if tainted(node) {
					t.Errorf("node %s kept the disrupted taint after it left the command", name)
				}
			}
			if moved > tc.free {
				t.Errorf("deleted %v, whose pods need %.1f cores where %.1f are free", deleted, moved, tc.free)
			}
			if tc.free > 0 && (len(deleted) == 0 || len(released) == 0) {
				t.Errorf("deleted %v and released %v of the rest %v: want those whose pods fit in %.1f cores deleted, the others released", deleted, released, rest, tc.free)
			}
			if tc.free == 0 && len(deleted) > 0 {
				t.Errorf("deleted %v although no pod of the rest fits", deleted)
			}
		})
	}
}

// isSubset reports whether every element of a is in b.
func isSubset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// TestPassLeavesTheCacheAlone: a pass reads Nodes and Pods from the cache without copying them (View), so it
// must not change them. After passes that decide (a drifted node is replaced, consolidation considered) and
// run a command, every cached pod is as it was, and every Node too but for what the pass wrote on purpose (the
// disrupted taint, through the API server).
func TestPassLeavesTheCacheAlone(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	drifted(t, e)
	serviceNode(t, e, "keeper", "64", "2", "3")
	serviceNode(t, e, "small-a", "8", "1")
	serviceNode(t, e, "small-b", "8", "500m", "250m")
	before := cached(t, e)
	ctrl := disruption.NewController(e.Deps)
	for range 3 {
		if err := ctrl.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		e.Clock.Step(disruption.PollPeriod)
	}
	old := &karpv1.NodeClaim{}
	if err := e.Env.Client.Get(ctx, client.ObjectKey{Name: "old"}, old); err != nil {
		t.Fatal(err)
	}
	if old.DeletionTimestamp.IsZero() && old.Annotations[disruption.CommandAnnotationKey] == "" {
		t.Fatal("the passes started no command on the drifted node: the test does not test anything")
	}
	after := cached(t, e)
	if diff := cmp.Diff(before.pods, after.pods); diff != "" {
		t.Errorf("cached pods changed by the passes (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(before.nodes, after.nodes, cmpopts.IgnoreFields(corev1.Node{}, "Spec.Taints", "ObjectMeta.ResourceVersion", "ObjectMeta.ManagedFields")); diff != "" {
		t.Errorf("cached nodes changed by the passes (-before +after):\n%s", diff)
	}
}

type cache struct {
	pods  []corev1.Pod
	nodes []corev1.Node
}

// cached returns deep copies of the pods and Nodes as the controller's cache holds them (the objects themselves,
// read without a copy, copied here).
func cached(t *testing.T, e *test.ControllerEnv) cache {
	t.Helper()
	pods, nodes := &corev1.PodList{}, &corev1.NodeList{}
	if err := e.Client.List(context.Background(), pods, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.List(context.Background(), nodes, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	out := cache{}
	for i := range pods.Items {
		out.pods = append(out.pods, *pods.Items[i].DeepCopy())
	}
	for i := range nodes.Items {
		out.nodes = append(out.nodes, *nodes.Items[i].DeepCopy())
	}
	sort.Slice(out.pods, func(i, j int) bool { return out.pods[i].Name < out.pods[j].Name })
	sort.Slice(out.nodes, func(i, j int) bool { return out.nodes[i].Name < out.nodes[j].Name })
	return out
}

// TestLaterWavesKeepTheirRoom: while a command's later waves wait for its first wave to drain, another command
// must fit beside them. The keeper has room for the twelve candidates' 39 cores and 3 more; a second command
// (recorded on node x, one pod of 6 cores) would fit beside the first wave alone (34 cores) but not beside all
// twelve, so it does not drain: x stays.
func TestLaterWavesKeepTheirRoom(t *testing.T) {
	e := test.StartControllerEnv(t)
	names := waveCluster(t, e)
	serviceNode(t, e, "x", "8", "6")
	bindPod(t, e, "hog", "22", "keeper")
	startCommand(t, e, "xcmd", []string{"x"})
	ctrl := disruption.NewController(e.Deps)
	for pass := range 2 {
		passDeletesFirstWave(t, e, ctrl, names, pass)
		if slices.Contains(deleting(t, e), "x") {
			t.Fatalf("pass %d: node x is being deleted although its pod does not fit beside the later waves", pass+1)
		}
	}
}

// passDeletesFirstWave runs a pass (the pass-th, counted from 0) and fails unless waveCluster's command is
// deleting exactly its first wave, the eight candidates with the largest pods (names[4:]). It then waits until
// the cache shows the deletions and steps the clock to the next busy pass.
func passDeletesFirstWave(t *testing.T, e *test.ControllerEnv, ctrl *disruption.Controller, names []string, pass int) {
	t.Helper()
	ctx := context.Background()
	if err := ctrl.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if got := deleting(t, e); !slices.Equal(got, names[4:]) {
		t.Fatalf("pass %d: deleting %v, want only the first wave %v", pass+1, got, names[4:])
	}
	test.Eventually(t, wait, func() (bool, string) {
		nc := &karpv1.NodeClaim{}
		err := e.Client.Get(ctx, client.ObjectKey{Name: names[4]}, nc)
		return err == nil && !nc.DeletionTimestamp.IsZero(), "deletion not cached yet"
	})
	e.Clock.Step(disruption.BusyPollPeriod)
}

// TestDeletionNotRepeatedWhileTheCacheLags: right after a pass deleted a wave, the next pass's cache may not
// show the deletions yet. The controller remembers what it deleted, so the second pass neither deletes the same
// wave again nor counts it twice in karpenter_nodeclaims_disrupted_total.
func TestDeletionNotRepeatedWhileTheCacheLags(t *testing.T) {
	e := test.StartControllerEnv(t)
	ctx := context.Background()
	waveCluster(t, e)
	d := e.Deps
	d.Client = interceptor.NewClient(noWatch{e.Client}, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			err := c.List(ctx, list, opts...)
			if l, ok := list.(*karpv1.NodeClaimList); ok {
				for i := range l.Items {
					l.Items[i].DeletionTimestamp = nil // a cache that has not seen the deletions
				}
			}
			return err
		},
	})
	ctrl := disruption.NewController(d)
	disrupted := func() float64 {
		return testutil.ToFloat64(e.Deps.Metrics.NodeClaimsDisrupted.WithLabelValues("underutilized", "default", karpv1.CapacityTypeOnDemand, "when_empty_or_underutilized", metrics.TerminationModeGraceful))
	}
	for pass := range 2 {
		if err := ctrl.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		if got := disrupted(); got != 8 {
			t.Fatalf("pass %d: %v NodeClaims counted as disrupted, want the first wave's 8", pass+1, got)
		}
		e.Clock.Step(disruption.BusyPollPeriod)
	}
}
