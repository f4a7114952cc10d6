package simulate

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestSimulateFromCluster runs simulate --from-cluster against a real API server: first with no NodePool it can
// launch from (clear errors), then with a NodePool, an EC2NodeClass, an existing Node with a pod, an in-flight
// NodeClaim, a Deployment, a DaemonSet and pending pods of every kind the snapshot must sort out.
func TestSimulateFromCluster(t *testing.T) {
	env := test.StartCLIEnv(t)
	kubeconfig := env.Kubeconfig
	ctx := context.Background()
	c := env.Client
	simulate := func(output string) (string, error) {
		t.Helper()
		return run(t, &Options{FromCluster: true, Kubeconfig: kubeconfig, InstanceTypesFile: "testdata/types.json", Output: output})
	}

	// Errors before the cluster has a NodePool to launch from.
	for _, tc := range []struct {
		name    string
		setup   func()
		o       *Options
		wantErr []string
	}{
		{name: "unreadable kubeconfig", o: &Options{FromCluster: true, Kubeconfig: "testdata/missing-kubeconfig", Output: "table"},
			wantErr: []string{"--from-cluster: loading kubeconfig", "testdata/missing-kubeconfig"}},
		{name: "no NodePools", wantErr: []string{"--from-cluster: the cluster has no NodePools"}},
		{name: "only static and not-ready NodePools", setup: func() {
			static := test.NodePool("fixed").Obj()
			static.Spec.Replicas = ptr.To[int64](3)
			broken := test.NodePool("broken").NodeClass("missing").Obj()
			env.Create(t, static, broken)
			broken.SetCondition(karpv1.ConditionTypeReady, metav1.ConditionFalse, "NodeClassNotFound", "EC2NodeClass missing not found")
			if err := c.Status().Update(ctx, broken); err != nil {
				t.Fatal(err)
			}
		}, wantErr: []string{"no NodePool of the cluster launches nodes for pending pods",
			"broken (not ready: NodeClassNotFound: EC2NodeClass missing not found)", "fixed (static: spec.replicas is 3)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			o := tc.o
			if o == nil {
				o = &Options{FromCluster: true, Kubeconfig: kubeconfig, InstanceTypesFile: "testdata/types.json", Output: "table"}
			}
			out, err := run(t, o)
			if err == nil {
				t.Fatalf("no error; output:\n%s", out)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}

	// The cluster.
	env.Create(t,
		test.NodePool("general").Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).Obj(),
		test.EC2NodeClass("default", "test").Obj(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
	)
	existing := test.Node("existing", "aws:///us-west-2a/i-existing").Ready(true).
		Label(karpv1.NodePoolLabelKey, "general").Label(corev1.LabelTopologyZone, "us-west-2a").
		Label(corev1.LabelInstanceTypeStable, "m5.xlarge").Label(karpv1.CapacityTypeLabelKey, karpv1.CapacityTypeOnDemand).
		Label(corev1.LabelArchStable, "amd64").Label(corev1.LabelOSStable, "linux").Obj()
	env.Create(t, existing)
	existing.Status = test.Node("existing", "").Ready(true).Obj().Status
	if err := c.Status().Update(ctx, existing); err != nil {
		t.Fatal(err)
	}
	// The API server taints new Nodes not-ready; the node lifecycle controller, absent here, would lift it.
	existing.Spec.Taints = nil
	if err := c.Update(ctx, existing); err != nil {
		t.Fatal(err)
	}
	// A launched NodeClaim whose Node has not registered: pods may be planned onto it.
	inflight := test.NodeClaim("general-inflight", "general").
		Requirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, "us-west-2b").
		Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.large").
		Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).Obj()
	env.Create(t, inflight)
	inflight.Status.ProviderID = "aws:///us-west-2b/i-inflight"
	inflight.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"),
		corev1.ResourceMemory: resource.MustParse("6Gi"), corev1.ResourcePods: resource.MustParse("20")}
	inflight.Status.Capacity = inflight.Status.Allocatable.DeepCopy()
	if err := c.Status().Update(ctx, inflight); err != nil {
		t.Fatal(err)
	}

	gated := test.Pod("gated").Namespace("shop").Requests("1", "1Gi").Obj()
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}}
	env.Create(t,
		// On the existing node: 2 of its 4 cpu are taken.
		test.Pod("running").Namespace("shop").Requests("2", "1Gi").NodeName("existing").Obj(),
		// Pending: two fit the rest of the existing node, one only the in-flight NodeClaim (zone), two need a
		// new node, two fit nowhere.
		test.Pod("small-1").Namespace("shop").Requests("1", "1Gi").Zone("us-west-2a").Obj(),
		test.Pod("small-2").Namespace("shop").Requests("1", "1Gi").Zone("us-west-2a").Obj(),
		test.Pod("medium").Namespace("shop").Requests("1200m", "1Gi").Zone("us-west-2b").Obj(),
		test.Pod("big-1").Namespace("shop").Requests("3", "4Gi").Obj(),
		test.Pod("big-2").Namespace("shop").Requests("3", "4Gi").Obj(),
		test.Pod("huge").Namespace("shop").Requests("96", "").Obj(),
		test.Pod("arm").Namespace("shop").Requests("1", "").NodeSelector(corev1.LabelArchStable, "arm64").Obj(),
		// Not pending for the provisioner: a DaemonSet's pod, a gated pod, a finished pod.
		test.Pod("agent-x").Namespace("shop").Requests("100m", "").OwnedBy("apps/v1", "DaemonSet", "agent").Obj(),
		gated,
		test.Pod("done").Namespace("shop").Requests("1", "").Obj(),
		// Workloads: a Deployment is not expanded (its pods, once created, are read as pods); the DaemonSet adds
		// its requests to every new node.
		deployment("shop", "web", 3, "1", "1Gi"),
		daemonSet("shop", "agent", "100m", "64Mi"),
	)
	done := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "done"}, done); err != nil {
		t.Fatal(err)
	}
	done.Status.Phase = corev1.PodSucceeded
	if err := c.Status().Update(ctx, done); err != nil {
		t.Fatal(err)
	}

	out, err := simulate("json")
	if err != nil {
		t.Fatal(err)
	}
	var r report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if r.Pods != 7 {
		t.Errorf("pods = %d, want 7 (the pending ones, without the DaemonSet, gated and finished pods or the Deployment's replicas)", r.Pods)
	}
	if d := cmp.Diff([]placementOut{{Pod: "shop/medium", Node: "general-inflight"}, {Pod: "shop/small-1", Node: "existing"},
		{Pod: "shop/small-2", Node: "existing"}}, sortedPlacements(r.OnExistingNodes)); d != "" {
		t.Errorf("placements on existing nodes (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]nodeGroup{{InstanceType: "m5.2xlarge", CapacityType: karpv1.CapacityTypeOnDemand,
		NodePool: "general", Count: 1, Pods: 2, HourlyCost: 0.384}}, r.NewNodes, cmpopts.IgnoreFields(nodeGroup{}, "Zone")); d != "" {
		t.Errorf("new nodes (-want +got):\n%s", d)
	}
	if len(r.NodeClaims) != 1 || !cmp.Equal(sortedStrings(r.NodeClaims[0].Pods), []string{"shop/big-1", "shop/big-2"}) {
		t.Errorf("new NodeClaims = %+v, want one with shop/big-1 and shop/big-2", r.NodeClaims)
	}
	reasons := map[string]string{}
	for _, u := range r.Unschedulable {
		reasons[u.Pod] = u.Reason
	}
	if d := cmp.Diff([]string{"shop/arm", "shop/huge"}, sortedKeys(reasons)); d != "" {
		t.Errorf("unschedulable pods (-want +got):\n%s", d)
	}
	for pod, want := range map[string]string{"shop/huge": "requests 96 cpu", "shop/arm": "arm64"} {
		if !strings.Contains(reasons[pod], want) {
			t.Errorf("reason for %s = %q, want it to mention %q", pod, reasons[pod], want)
		}
	}
	if d := cmp.Diff([]SkippedNodePool{{NodePool: "broken", Reason: "not ready: NodeClassNotFound: EC2NodeClass missing not found"},
		{NodePool: "fixed", Reason: "static: spec.replicas is 3"}}, r.SkippedNodePools); d != "" {
		t.Errorf("skipped NodePools (-want +got):\n%s", d)
	}

	table, err := simulate("table")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"general   m5.2xlarge", "total", "On existing nodes:  3 pods", "shop/small-1 -> existing", "shop/medium -> general-inflight",
		"Unschedulable:      2 pods", "shop/huge: ", "Skipped NodePools:  2", "fixed: static: spec.replicas is 3", "for 7 pods",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func sortedPlacements(in []placementOut) []placementOut {
	out := append([]placementOut(nil), in...)
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out
}

func sortedStrings(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func deployment(ns, name string, replicas int32, cpu, memory string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	pod := test.Pod(name).Requests(cpu, memory).Obj()
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec}}}
}

func daemonSet(ns, name string, cpu, memory string) *appsv1.DaemonSet {
	labels := map[string]string{"app": name}
	pod := test.Pod(name).Requests(cpu, memory).Obj()
	return &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec}}}
}
