package explain

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/test"
)

func fakeClient(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, awsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithIndex(&coordinationv1.Lease{}, "metadata.name", func(o client.Object) []string { return []string{o.GetName()} }).Build()
}

func TestExplainPod(t *testing.T) {
	general := test.NodePool("general").Requirement("karpenter.k8s.aws/instance-family", corev1.NodeSelectorOpIn, "m5").Limit(corev1.ResourceCPU, "50").Obj()
	gpu := test.NodePool("gpu").Taint("dedicated", "gpu", corev1.TaintEffectNoSchedule).Obj()
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{name: "too big for the family", pod: test.Pod("big").Requests("200", "").Unschedulable().Obj(), want: []string{
			"Outcome: unschedulable [Resources]",
			"NodePool general (weight 0,",
			"reason: [Resources] requests 200 cpu; largest instance type allowed by NodePool general has 95",
			"NodePool gpu (weight 0,",
			"reason: [Taints] pod does not tolerate taint dedicated=gpu:NoSchedule",
			"fix:    add a toleration for dedicated=gpu:NoSchedule to the pod",
		}},
		{name: "beyond the limit", pod: test.Pod("wide").Requests("90", "").Toleration("dedicated", corev1.TolerationOpEqual, "gpu", corev1.TaintEffectNoSchedule).Obj(), want: []string{
			"Outcome: a new node from NodePool gpu",
			"NodePool gpu (weight 0,",
			"can launch a node for the pod (cheapest",
			"fix:    raise NodePool general's limit cpu from 50 to at least 96",
		}},
		{name: "fits", pod: test.Pod("small").Requests("1", "1Gi").Obj(), want: []string{"Outcome: a new node from NodePool"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeClient(t, general, gpu, tc.pod)
			var out bytes.Buffer
			err := RunPod(context.Background(), c, &Options{Output: "table", Region: "us-west-2"}, types.NamespacedName{Namespace: "default", Name: tc.pod.Name}, &out)
			if err != nil {
				t.Fatalf("RunPod: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestExplainPodJSON(t *testing.T) {
	c := fakeClient(t, test.NodePool("general").Obj(), test.Pod("p").Request("nvidia.com/gpu", "100").Obj())
	var out bytes.Buffer
	if err := RunPod(context.Background(), c, &Options{Output: "json", Region: "us-west-2"}, types.NamespacedName{Namespace: "default", Name: "p"}, &out); err != nil {
		t.Fatalf("RunPod: %v", err)
	}
	var r PodReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out.String())
	}
	if r.Explanation == nil || len(r.Explanation.NodePools) != 1 || r.Explanation.NodePools[0].Code != scheduling.ReasonResources {
		t.Fatalf("want one NodePool with code Resources, got %s", out.String())
	}
}

func TestExplainPodErrors(t *testing.T) {
	c := fakeClient(t, test.NodePool("general").Obj(), test.Pod("bound").NodeName("n1").Obj(),
		test.Pod("agent").OwnedBy("apps/v1", "DaemonSet", "agent").Obj())
	var out bytes.Buffer
	if err := RunPod(context.Background(), c, &Options{Output: "yaml"}, types.NamespacedName{Namespace: "default", Name: "bound"}, &out); err == nil || !strings.Contains(err.Error(), "--output") {
		t.Errorf("bad -o: err = %v", err)
	}
	if err := RunPod(context.Background(), c, &Options{Output: "table"}, types.NamespacedName{Namespace: "default", Name: "nope"}, &out); err == nil || !strings.Contains(err.Error(), "default/nope not found") {
		t.Errorf("missing pod: err = %v", err)
	}
	out.Reset()
	if err := RunPod(context.Background(), c, &Options{Output: "table"}, types.NamespacedName{Namespace: "default", Name: "bound"}, &out); err != nil || !strings.Contains(out.String(), "bound to node n1") {
		t.Errorf("bound pod: err = %v, output %q", err, out.String())
	}
	if err := RunPod(context.Background(), c, &Options{Output: "table"}, types.NamespacedName{Namespace: "default", Name: "agent"}, &out); err == nil || !strings.Contains(err.Error(), "belongs to a DaemonSet") {
		t.Errorf("daemonset pod: err = %v", err)
	}
	if _, err := parsePodArg("a/b/c"); err == nil {
		t.Errorf("parsePodArg(a/b/c) accepted")
	}
}

func TestExplainNode(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{karpv1.NodePoolLabelKey: "general"}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-west-2a/i-1"}}
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-abc", Annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}},
		Status: karpv1.NodeClaimStatus{NodeName: "n1", ProviderID: "aws:///us-west-2a/i-1",
			Conditions: []metav1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized"}}}}
	guarded := test.Pod("db-0").NodeName("n1").Obj()
	guarded.Labels = map[string]string{"app": "db"}
	pinned := test.Pod("batch").NodeName("n1").Obj()
	pinned.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	ds := test.Pod("agent").NodeName("n1").OwnedBy("apps/v1", "DaemonSet", "agent").Obj()
	ds.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0}}
	c := fakeClient(t, node, nc, guarded, pinned, ds, pdb, test.NodePool("general").Obj())
	var out bytes.Buffer
	if err := RunNode(context.Background(), c, &Options{Output: "json", Region: "us-west-2"}, "n1", &out); err != nil {
		t.Fatalf("RunNode: %v", err)
	}
	var r NodeReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"NodeClaim annotation karpenter.sh/do-not-disrupt=true",
		"pod default/batch has karpenter.sh/do-not-disrupt=true",
		"pod default/db-0 is protected by PodDisruptionBudget db (0 disruptions allowed)",
	}
	if strings.Join(r.Blockers, "\n") != strings.Join(want, "\n") {
		t.Errorf("blockers:\n%s\nwant:\n%s", strings.Join(r.Blockers, "\n"), strings.Join(want, "\n"))
	}
	if r.NodeClaim != "general-abc" || r.Requests["pods"] != "3" {
		t.Errorf("nodeclaim %q pods %q, want general-abc and 3", r.NodeClaim, r.Requests["pods"])
	}
	out.Reset()
	if err := RunNode(context.Background(), c, &Options{Output: "table", Region: "us-west-2"}, "n1", &out); err != nil || !strings.Contains(out.String(), "Why it stays:") {
		t.Errorf("table: err %v output:\n%s", err, out.String())
	}
	if err := RunNode(context.Background(), c, &Options{Output: "table"}, "nope", &out); err == nil || !strings.Contains(err.Error(), "node nope not found") {
		t.Errorf("missing node: err = %v", err)
	}
}

// NodePools the provisioner does not launch from (static, not ready) are left out of the analysis with a warning.
func TestExplainPodWarnsOfSkippedNodePools(t *testing.T) {
	static := test.NodePool("fixed").Obj()
	replicas := int64(2)
	static.Spec.Replicas = &replicas
	c := fakeClient(t, test.NodePool("general").Obj(), static, test.Pod("p").Requests("1", "1Gi").Obj())
	var out bytes.Buffer
	if err := RunPod(context.Background(), c, &Options{Output: "table", Region: "us-west-2"}, types.NamespacedName{Namespace: "default", Name: "p"}, &out); err != nil {
		t.Fatalf("RunPod: %v", err)
	}
	if want := "warning: NodePool fixed is left out: static: spec.replicas is 2"; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
	if strings.Contains(out.String(), "NodePool fixed (weight") {
		t.Errorf("static NodePool analysed as if it launched nodes for pending pods:\n%s", out.String())
	}
}
