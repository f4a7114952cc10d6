package explain

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/test"
)

// placementGroupClass is an EC2NodeClass selecting placement group "hpc" whose PlacementGroupReady is False.
func placementGroupClass(name, reason, message string) *awsv1.EC2NodeClass {
	nc := test.EC2NodeClass(name, "dovetail").Obj()
	nc.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelectorTerm{Name: "hpc"}
	nc.Status.Conditions = []metav1.Condition{{Type: awsv1.ConditionTypePlacementGroupReady, Status: metav1.ConditionFalse, Reason: reason, Message: message}}
	return nc
}

// TestNodeClassNotes: a False PlacementGroupReady (either reason) and efa-only network interfaces are explained
// for the node classes NodePools use, with a fix for each reason; classes no NodePool uses and ready ones say
// nothing.
func TestNodeClassNotes(t *testing.T) {
	efa := test.EC2NodeClass("efa", "dovetail").Obj()
	efa.Spec.NetworkInterfaces = []awsv1.NetworkInterface{
		{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeInterface},
		{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeEFAOnly},
		{NetworkCardIndex: 2, DeviceIndex: 0, InterfaceType: awsv1.InterfaceTypeEFAOnly},
	}
	ready := test.EC2NodeClass("ready", "dovetail").Obj()
	ready.Spec.PlacementGroupSelector = &awsv1.PlacementGroupSelectorTerm{Name: "hpc"}
	ready.Status.Conditions = []metav1.Condition{{Type: awsv1.ConditionTypePlacementGroupReady, Status: metav1.ConditionTrue, Reason: "Ready"}}
	pools := []*karpv1.NodePool{
		test.NodePool("b").NodeClass("gone").Obj(), test.NodePool("a").NodeClass("gone").Obj(),
		test.NodePool("c").NodeClass("denied").Obj(), test.NodePool("d").NodeClass("efa").Obj(), test.NodePool("e").NodeClass("ready").Obj(),
	}
	classes := []*awsv1.EC2NodeClass{
		placementGroupClass("gone", "PlacementGroupNotFound", `Placement group "hpc" not found`),
		placementGroupClass("denied", "PlacementGroupResolutionFailed", `Failed to resolve placement group "hpc": UnauthorizedOperation`),
		placementGroupClass("unused", "PlacementGroupNotFound", `Placement group "hpc" not found`),
		efa, ready,
	}
	got := nodeClassNotes(pools, classes)
	want := []string{
		`EC2NodeClass denied is not ready: PlacementGroupReady=False (PlacementGroupResolutionFailed): Failed to resolve placement group "hpc": UnauthorizedOperation; NodePool(s) [c] launch no node until it is: check the controller's ec2:DescribePlacementGroups permission`,
		"EC2NodeClass efa asks for 2 efa-only network interface(s): instance types without that many EFA interfaces",
		`EC2NodeClass gone is not ready: PlacementGroupReady=False (PlacementGroupNotFound): Placement group "hpc" not found; NodePool(s) [a b] launch no node until it is: create the placement group`,
	}
	if len(got) != len(want) {
		t.Fatalf("notes:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("note %d:\n%s\nwant it to start with\n%s", i, got[i], want[i])
		}
	}
}

// TestExplainPodWarnsOfPlacementGroup: the pod explanation carries the warning of a NodePool whose EC2NodeClass's
// placement group is not ready, the NodePool being left out, and the node explanation carries it too.
func TestExplainPodWarnsOfPlacementGroup(t *testing.T) {
	hpc := test.NodePool("hpc").NodeClass("hpc").Obj()
	hpc.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "NodeClassNotReady"}}
	class := placementGroupClass("hpc", "PlacementGroupNotFound", `Placement group "hpc" not found`)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{karpv1.NodePoolLabelKey: "general"}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-west-2a/i-1"}}
	c := fakeClient(t, test.NodePool("general").Obj(), hpc, class, node, test.Pod("p").Requests("1", "1Gi").Obj())
	want := `EC2NodeClass hpc is not ready: PlacementGroupReady=False (PlacementGroupNotFound): Placement group "hpc" not found; NodePool(s) [hpc] launch no node until it is`
	var out bytes.Buffer
	if err := RunPod(context.Background(), c, &Options{Output: "table", Region: "us-west-2"}, types.NamespacedName{Namespace: "default", Name: "p"}, &out); err != nil {
		t.Fatalf("RunPod: %v", err)
	}
	if !strings.Contains(out.String(), "warning: "+want) {
		t.Errorf("pod output lacks %q:\n%s", want, out.String())
	}
	out.Reset()
	if err := RunNode(context.Background(), c, &Options{Output: "json", Region: "us-west-2"}, "n1", &out); err != nil {
		t.Fatalf("RunNode: %v", err)
	}
	var r NodeReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range r.Warnings {
		found = found || strings.HasPrefix(w, want)
	}
	if !found {
		t.Errorf("node warnings %q lack %q", r.Warnings, want)
	}
}
