package provisioning

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail/dovetail/pkg/test"
)

// BenchmarkPassIntoCluster measures a provisioning pass of bench-scale's provisioning phase through the
// controller (snapshot, solve, apply) on a fake client: 2,000 pending pods of the mix of Karpenter's performance
// suite (hostname-spread, large and do-not-disrupt, 500 : 500 : 100) for a NodePool of their own, in a cluster of
// 5,000 registered, initialized m5.xlarge nodes with ten 370m pods each (DOVETAIL_BENCH_NODES changes the nodes).
// The first pass creates the NodeClaims (not measured); each measured pass finds them in flight, as a pass does
// while the scale-out launches. The fake client copies every object it lists: the profile, not the time, says
// what the controller spends.
func BenchmarkPassIntoCluster(b *testing.B) {
	nodes := test.BenchCount(b, "DOVETAIL_BENCH_NODES", 5000)
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		b.Fatal(err)
	}
	created := metav1.NewTime(time.Now().Add(-time.Hour))
	objs := []client.Object{
		test.NodePool("scale").Requirement(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "m5.xlarge").
			Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeOnDemand).Obj(),
		test.NodePool("grow").Requirement(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, karpv1.CapacityTypeSpot, karpv1.CapacityTypeOnDemand).Obj(),
	}
	labels := map[string]string{karpv1.NodePoolLabelKey: "scale", corev1.LabelInstanceTypeStable: "m5.xlarge",
		karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand, corev1.LabelTopologyZone: "us-west-2a", corev1.LabelArchStable: "amd64",
		corev1.LabelOSStable: "linux", karpv1.NodeRegisteredLabelKey: "true", karpv1.NodeInitializedLabelKey: "true"}
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3920m"), corev1.ResourceMemory: resource.MustParse("14Gi"),
		corev1.ResourcePods: resource.MustParse("58")}
	for i := range nodes {
		name, id := fmt.Sprintf("ip-10-%d-%d", i/250, i%250), fmt.Sprintf("aws:///us-west-2a/i-%08d", i)
		nb := test.Node(name, id).Ready(true)
		for k, v := range labels {
			nb.Label(k, v)
		}
		node := nb.Obj()
		node.Status.Allocatable, node.Status.Capacity = alloc, alloc
		node.CreationTimestamp = created
		nc := test.NodeClaim(fmt.Sprintf("scale-%05d", i), "scale").ProviderID(id).NodeName(name).
			Launched(created.Time).Initialized(created.Time).Obj()
		nc.Labels = labels
		nc.Status.Allocatable, nc.Status.Capacity = alloc, alloc
		nc.CreationTimestamp = created
		objs = append(objs, node, nc)
		for j := range 10 {
			objs = append(objs, test.Pod(fmt.Sprintf("app-%02d-%05d", (i*10+j)%50, i*10+j)).Label("app", fmt.Sprintf("app-%02d", (i*10+j)%50)).
				Requests("370m", "1Gi").NodeName(name).Phase(corev1.PodRunning).Obj())
		}
	}
	const total = 2000
	dnd := total / 11
	spread := (total - dnd) / 2
	for i := range total {
		p := test.Pod(fmt.Sprintf("grow-%04d", i)).NodeSelector(karpv1.NodePoolLabelKey, "grow").Unschedulable()
		switch {
		case i < spread:
			p = p.Label("app", "spread").Requests("900m", "3174Mi").
				Spread(corev1.LabelHostname, 1, corev1.DoNotSchedule, map[string]string{"app": "spread"})
		case i < spread+dnd:
			p = p.Label("app", "dnd").Requests("900m", "3174Mi").Annotation(karpv1.DoNotDisruptAnnotationKey, "true")
		default:
			p = p.Label("app", "big").Requests("3500m", "28Gi")
		}
		objs = append(objs, p.Obj())
	}
	kube := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&corev1.Pod{}, &karpv1.NodeClaim{}).Build()
	c, _ := newTestController(kube)
	c.deps.Recorder = &record.FakeRecorder{} // events dropped: the test recorder's buffer would fill and block
	c.deps.CloudProvider.(*fake.CloudProvider).SetInstanceTypes(test.BenchmarkInstanceTypes())
	if err := c.Schedule(ctx); err != nil {
		b.Fatal(err)
	}
	list := &karpv1.NodeClaimList{}
	if err := kube.List(ctx, list, client.MatchingLabels{karpv1.NodePoolLabelKey: "grow"}); err != nil {
		b.Fatal(err)
	}
	if len(list.Items) == 0 {
		b.Fatal("the first pass created no NodeClaim")
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := c.Schedule(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(list.Items)), "nodeclaims")
}
