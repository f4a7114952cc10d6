package clusterinput

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/test"
)

// TestBuildDeducesSpreadSelectors: with SCHEDULER_CONFIG's default constraints, the scheduler's input
// carries them and each pending pod's selector, deduced from the Services and the controller selecting it.
func TestBuildDeducesSpreadSelectors(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1"},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"hash": "1"}}}}
	web := test.Pod("web-a").Requests("1", "1Gi").OwnedBy("apps/v1", "ReplicaSet", "web-1").Unschedulable().Obj()
	web.Labels = map[string]string{"app": "web", "hash": "1"}
	own := test.Pod("own").Requests("1", "1Gi").Spread(corev1.LabelHostname, 1, corev1.DoNotSchedule, map[string]string{"app": "web"}).Unschedulable().Obj()
	own.Labels = map[string]string{"app": "web"}
	lone := test.Pod("lone").Requests("1", "1Gi").OwnedBy("batch/v1", "Job", "j").Unschedulable().Obj()
	api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(test.NodePool("default").Obj(), svc, rs, web, own, lone).Build()
	d := testDeps(api)
	defaults := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}}
	d.Settings.DefaultSpreadConstraints = defaults

	in, err := pendingInput(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(defaults, in.DefaultSpread); diff != "" {
		t.Errorf("default spread (-want +got):\n%s", diff)
	}
	want := map[string]*metav1.LabelSelector{"default/web-a": {MatchLabels: map[string]string{"app": "web"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "hash", Operator: metav1.LabelSelectorOpIn, Values: []string{"1"}}}}}
	if diff := cmp.Diff(want, in.SpreadSelectors); diff != "" {
		t.Errorf("selectors (-want +got):\n%s", diff)
	}

	d.Settings.DefaultSpreadConstraints = nil
	if in, err = pendingInput(ctx, d); err != nil {
		t.Fatal(err)
	}
	if in.DefaultSpread != nil || in.SpreadSelectors != nil {
		t.Errorf("without default constraints the input carries %v and %v", in.DefaultSpread, in.SpreadSelectors)
	}
}

// TestBuildReadsCSINodeLimits: an existing node's attach limits come from its CSINode, per driver; a
// driver without an allocatable count is not limited.
func TestBuildReadsCSINodeLimits(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	ten := int32(10)
	csi := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: "ebs.csi.aws.com", NodeID: "i-1", Allocatable: &storagev1.VolumeNodeResources{Count: &ten}},
		{Name: "efs.csi.aws.com", NodeID: "i-1"},
	}}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(test.NodePool("default").Obj(), csi, node,
		test.Pod("p").Requests("1", "1Gi").Unschedulable().Obj()).Build()
	in, err := pendingInput(ctx, testDeps(api))
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Nodes) != 1 {
		t.Fatalf("%d nodes in the input, want 1", len(in.Nodes))
	}
	if d := cmp.Diff(map[string]int{"ebs.csi.aws.com": 10}, in.Nodes[0].VolumeLimits); d != "" {
		t.Errorf("volume limits (-want +got):\n%s", d)
	}
}

// TestBuildLearnsVolumeLimitsOfNewNodes: a new node of an instance type is given the attach limit the
// CSINode of an existing node of that type reports (the smallest when several do), for that driver only; other
// types stay unlimited, and the cloud provider's instance types are left as they are.
func TestBuildLearnsVolumeLimitsOfNewNodes(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{test.NodePool("default").Obj(), test.Pod("p").Requests("1", "1Gi").Unschedulable().Obj()}
	for name, count := range map[string]int32{"n1": 10, "n2": 12} {
		objs = append(objs,
			&storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
				{Name: "ebs.csi.aws.com", NodeID: name, Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To(count)}},
				{Name: "efs.csi.aws.com", NodeID: name},
			}}},
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelInstanceTypeStable: "fake-large"}}})
	}
	api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	d := testDeps(api)
	in, err := pendingInput(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.NodePools) != 1 {
		t.Fatalf("%d nodepools in the input, want 1", len(in.NodePools))
	}
	got := map[string]map[string]int{}
	for _, it := range in.NodePools[0].InstanceTypes {
		if it.VolumeLimits != nil {
			got[it.Name] = it.VolumeLimits
		}
	}
	if diff := cmp.Diff(map[string]map[string]int{"fake-large": {"ebs.csi.aws.com": 10}}, got); diff != "" {
		t.Errorf("volume limits of new nodes by instance type (-want +got):\n%s", diff)
	}
	its, err := d.CloudProvider.GetInstanceTypes(ctx, test.NodePool("default").Obj())
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		if it.VolumeLimits != nil {
			t.Errorf("the cloud provider's %s now has volume limits %v", it.Name, it.VolumeLimits)
		}
	}
}

// TestBuildReadsVolumesOfBoundPods: the claims and volumes of the pods bound to a node with attach limits
// are in the input, so the volumes they hold count against the node's limit; a node without limits needs none.
func TestBuildReadsVolumesOfBoundPods(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	objs := []client.Object{test.NodePool("default").Obj(), test.Pod("pending").Requests("1", "1Gi").Unschedulable().Obj(),
		&storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "limited"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
			{Name: "ebs.csi.aws.com", NodeID: "i-1", Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](10)}}}}},
	}
	for _, node := range []string{"limited", "unlimited"} {
		claim, volume := "data-"+node, "pv-"+node
		pod := test.Pod("db-"+node).Requests("1", "1Gi").NodeName(node).Phase(corev1.PodRunning).Obj()
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
		objs = append(objs, pod, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}},
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: claim}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: volume}},
			&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: volume}, Spec: corev1.PersistentVolumeSpec{
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: volume}}}})
	}
	api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	in, err := pendingInput(ctx, testDeps(api))
	if err != nil {
		t.Fatal(err)
	}
	var claims, volumes []string
	for _, pvc := range in.PersistentVolumeClaims {
		claims = append(claims, pvc.Name)
	}
	for _, pv := range in.PersistentVolumes {
		volumes = append(volumes, pv.Name)
	}
	if d := cmp.Diff([]string{"data-limited"}, claims); d != "" {
		t.Errorf("claims in the input (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"pv-limited"}, volumes); d != "" {
		t.Errorf("volumes in the input (-want +got):\n%s", d)
	}
}
