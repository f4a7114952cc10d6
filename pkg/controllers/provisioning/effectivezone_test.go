package provisioning

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	clientfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/pkg/test"
)

// withClaim mounts the claim named claim in pod.
func withClaim(pod *corev1.Pod, claim string) *corev1.Pod {
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: claim,
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	return pod
}

func zoneIn(key string, zones ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: zones}
}

// TestEffectiveZone: a pod's zone label value from its own zone requirements and its volumes' zones.
func TestEffectiveZone(t *testing.T) {
	in := solver.Input{
		PersistentVolumeClaims: []*corev1.PersistentVolumeClaim{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bound-a"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-a"}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "unbound-ab"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("ab")}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "unbound-any"}, Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("any")}},
		},
		PersistentVolumes: []*corev1.PersistentVolume{{ObjectMeta: metav1.ObjectMeta{Name: "pv-a"}, Spec: corev1.PersistentVolumeSpec{
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{zoneIn(ebsZoneLabel, "us-west-2a")}}}}}}}},
		StorageClasses: []*storagev1.StorageClass{
			{ObjectMeta: metav1.ObjectMeta{Name: "ab"}, AllowedTopologies: []corev1.TopologySelectorTerm{{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{
				{Key: corev1.LabelTopologyZone, Values: []string{"us-west-2a", "us-west-2b"}}}}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "any"}},
		},
	}
	volumes := newVolumeZones(in)
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want string
	}{
		{"no zone constraint", test.Pod("p").Obj(), ZoneFlexible},
		{"zone in the node selector", test.Pod("p").Zone("us-west-2b").Obj(), "us-west-2b"},
		{"two zones in required affinity", test.Pod("p").RequiredAffinity(zoneIn(corev1.LabelTopologyZone, "us-west-2a", "us-west-2b")).Obj(), ZoneFlexible},
		{"node selector and affinity agree on one", test.Pod("p").Zone("us-west-2a").RequiredAffinity(zoneIn(corev1.LabelTopologyZone, "us-west-2a", "us-west-2b")).Obj(), "us-west-2a"},
		{"node selector and affinity disagree", test.Pod("p").Zone("us-west-2c").RequiredAffinity(zoneIn(corev1.LabelTopologyZone, "us-west-2a")).Obj(), ZoneNone},
		{"zone excluded", test.Pod("p").Zone("us-west-2a").RequiredAffinity(corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone,
			Operator: corev1.NodeSelectorOpNotIn, Values: []string{"us-west-2a"}}).Obj(), ZoneNone},
		{"zone must not exist", test.Pod("p").RequiredAffinity(corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone,
			Operator: corev1.NodeSelectorOpDoesNotExist}).Obj(), ZoneNone},
		{"bound volume's zone", withClaim(test.Pod("p").Obj(), "bound-a"), "us-west-2a"},
		{"storage class's two zones", withClaim(test.Pod("p").Obj(), "unbound-ab"), ZoneFlexible},
		{"class without topology", withClaim(test.Pod("p").Obj(), "unbound-any"), ZoneFlexible},
		{"two volumes narrow to one zone", withClaim(withClaim(test.Pod("p").Obj(), "unbound-ab"), "bound-a"), "us-west-2a"},
		{"pod's zone and volume's disagree", withClaim(test.Pod("p").Zone("us-west-2b").Obj(), "bound-a"), ZoneNone},
		{"pod's zones narrowed by its volume", withClaim(test.Pod("p").RequiredAffinity(zoneIn(corev1.LabelTopologyZone, "us-west-2b", "us-west-2c")).Obj(), "unbound-ab"), "us-west-2b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := effectiveZone(tc.pod, volumes); got != tc.want {
				t.Errorf("effective zone %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPendingPodsByEffectiveZoneRecorded: a pass sets the gauge from its pending pods and drops the zones of the pass
// before.
func TestPendingPodsByEffectiveZoneRecorded(t *testing.T) {
	ctx := context.Background()
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	pods := []*corev1.Pod{
		test.Pod("a1").Requests("1", "1Gi").Zone("us-west-2a").Unschedulable().Obj(),
		test.Pod("a2").Requests("1", "1Gi").Zone("us-west-2a").Unschedulable().Obj(),
		test.Pod("any").Requests("1", "1Gi").Unschedulable().Obj(),
	}
	api := clientfake.NewClientBuilder().WithScheme(scheme).WithObjects(test.NodePool("default").Obj(), pods[0], pods[1], pods[2]).Build()
	c, _ := newTestController(api)
	if err := c.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	g := c.deps.Metrics.SchedulerPendingPodsByEffectiveZone
	got := map[string]float64{}
	for _, z := range []string{"us-west-2a", ZoneFlexible} {
		got[z] = testutil.ToFloat64(g.WithLabelValues(Name, z))
	}
	if diff := cmp.Diff(map[string]float64{"us-west-2a": 2, ZoneFlexible: 1}, got); diff != "" {
		t.Errorf("pending pods by effective zone (-want +got):\n%s", diff)
	}
	// The pods are gone: the next pass leaves no series.
	for _, p := range pods {
		if err := api.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := c.reconcilePod(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(p)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Schedule(ctx); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(g); n != 0 {
		t.Errorf("%d series after a pass without pending pods, want 0", n)
	}
}
