package operator

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/podmetrics"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/pkg/test"
)

// fullPod has every field a controller reads and the bulky ones none reads.
func fullPod() *corev1.Pod {
	started := metav1.NewTime(time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC))
	req := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("350m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "shop", Name: "web-1", UID: "u1", Labels: map[string]string{"app": "web"},
			Annotations:     map[string]string{karpv1.DoNotDisruptAnnotationKey: "true", LastAppliedAnnotation: `{"big":"copy"}`},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9", UID: "rs", Controller: ptr.To(true)}},
			Finalizers:      []string{"example.com/keep"},
		},
		Spec: corev1.PodSpec{
			NodeName: "node-a", NodeSelector: map[string]string{"pool": "a"},
			InitContainers: []corev1.Container{{Name: "sidecar", Image: "proxy", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: req,
				Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}},
			Containers: []corev1.Container{{
				Name: "app", Image: "app:1", Command: []string{"/app"}, Args: []string{"--x"}, Resources: req,
				Env:            []corev1.EnvVar{{Name: "A", Value: "b"}},
				Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}, {Name: "host", ContainerPort: 9100, HostPort: 9100, Protocol: corev1.ProtocolTCP}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(8080)}}},
				VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "config", MountPath: "/etc/app"}},
			}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}},
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web"}}}},
			},
			Affinity:                  &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}},
			Tolerations:               []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}},
			Overhead:                  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")},
			PriorityClassName:         "high", Priority: ptr.To[int32](1000),
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			SecurityContext:               &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true)},
			DNSConfig:                     &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.10"}},
			HostAliases:                   []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"db"}}},
			ImagePullSecrets:              []corev1.LocalObjectReference{{Name: "registry"}},
			ReadinessGates:                []corev1.PodReadinessGate{{ConditionType: "example.com/ready"}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, NominatedNodeName: "node-b", StartTime: &started,
			PodIP: "10.1.0.7", PodIPs: []corev1.PodIP{{IP: "10.1.0.7"}}, HostIP: "10.0.3.4", HostIPs: []corev1.HostIP{{IP: "10.0.3.4"}},
			QOSClass: corev1.PodQOSBurstable, Message: "running", Reason: "Started",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "app:1", ImageID: "app@sha256:0", ContainerID: "containerd://1", Ready: true, RestartCount: 2,
				Started: ptr.To(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}},
			InitContainerStatuses:      []corev1.ContainerStatus{{Name: "sidecar", Image: "proxy", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}},
			EphemeralContainerStatuses: []corev1.ContainerStatus{{Name: "debug"}},
		},
	}
}

// A cached pod keeps what scheduling, disruption, termination and metrics read, and loses the rest.
func TestTransformForCachePod(t *testing.T) {
	in := fullPod()
	out, err := TransformForCache(in.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	want := fullPod()
	want.ManagedFields = nil
	delete(want.Annotations, LastAppliedAnnotation)
	want.Spec.InitContainers = []corev1.Container{{Name: "sidecar", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Resources: want.Spec.InitContainers[0].Resources}}
	want.Spec.Containers = []corev1.Container{{Name: "app", Resources: want.Spec.Containers[0].Resources,
		Ports: []corev1.ContainerPort{{Name: "host", ContainerPort: 9100, HostPort: 9100, Protocol: corev1.ProtocolTCP}}}}
	want.Spec.EphemeralContainers = nil
	want.Spec.Volumes = want.Spec.Volumes[:2]
	want.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, RestartCount: 2, Started: ptr.To(true), State: want.Status.ContainerStatuses[0].State}}
	want.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "sidecar", State: want.Status.InitContainerStatuses[0].State}}
	want.Spec.SecurityContext, want.Spec.DNSConfig, want.Spec.HostAliases, want.Spec.ImagePullSecrets, want.Spec.ReadinessGates = nil, nil, nil, nil, nil
	want.Status = corev1.PodStatus{Phase: corev1.PodRunning, NominatedNodeName: "node-b",
		Conditions:            []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
		ContainerStatuses:     []corev1.ContainerStatus{{Name: "app", Ready: true, RestartCount: 2, Started: ptr.To(true), State: want.Status.ContainerStatuses[0].State}},
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "sidecar", State: want.Status.InitContainerStatuses[0].State}},
		// It has karpenter.sh/do-not-disrupt, whose duration value counts from the start.
		StartTime: fullPod().Status.StartTime,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("transformed pod (-want +got):\n%s", diff)
	}
	// What the controllers compute from a pod is the same from the cached copy.
	if a, b := solver.PodRequests(in), solver.PodRequests(got); !cmp.Equal(a, b) {
		t.Errorf("requests %v, from the cache %v", a, b)
	}
	if a, b := solver.IsProvisionable(in), solver.IsProvisionable(got); a != b {
		t.Errorf("provisionable %v, from the cache %v", a, b)
	}
	a, _ := podmetrics.StartedAt(in)
	b, _ := podmetrics.StartedAt(got)
	if !a.Equal(b) {
		t.Errorf("started at %v, from the cache %v", a, b)
	}
}

// A cached node keeps everything but its image list; any object loses managedFields and last-applied; a
// tombstone passes unchanged.
func TestTransformForCacheNodeAndOthers(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{corev1.LabelInstanceTypeStable: "m5.large"},
			Annotations:   map[string]string{"a": "b", LastAppliedAnnotation: "{}"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-west-2a/i-1", Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Images:      []corev1.ContainerImage{{Names: []string{"app:1"}, SizeBytes: 1}},
			NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: "v1.34.0"},
		},
	}
	out, err := TransformForCache(node.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	want := node.DeepCopy()
	want.ManagedFields, want.Status.Images = nil, nil
	delete(want.Annotations, LastAppliedAnnotation)
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("transformed node (-want +got):\n%s", diff)
	}

	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default", Annotations: map[string]string{LastAppliedAnnotation: "{}", karpv1.NodePoolHashAnnotationKey: "1"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	out, err = TransformForCache(np)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(*karpv1.NodePool); got.ManagedFields != nil || !cmp.Equal(got.Annotations, map[string]string{karpv1.NodePoolHashAnnotationKey: "1"}) {
		t.Errorf("nodepool after transform: managedFields %v, annotations %v", got.ManagedFields, got.Annotations)
	}

	tomb := cache.DeletedFinalStateUnknown{Key: "shop/web-1", Obj: fullPod()}
	out, err = TransformForCache(tomb)
	if err != nil || !cmp.Equal(out, tomb) {
		t.Errorf("tombstone changed: %v, %v", out, err)
	}
}

// The controllers write pods and nodes with merge patches computed between two copies of the cached object:
// what the transform stripped is absent from both, so the patch leaves it alone on the API server.
func TestPatchFromTransformedCopyKeepsStrippedFields(t *testing.T) {
	scheme, err := test.NewScheme(karpv1.AddToScheme)
	if err != nil {
		t.Fatal(err)
	}
	env := test.StartEnv(t, scheme)
	ctx := context.Background()
	c := env.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	pod := fullPod()
	pod.Spec.NodeName, pod.Status = "", corev1.PodStatus{}
	pod.ManagedFields, pod.UID, pod.Finalizers, pod.OwnerReferences, pod.Spec.EphemeralContainers = nil, "", nil, nil, nil
	pod.Spec.PriorityClassName, pod.Spec.Priority, pod.Spec.Overhead = "", nil, nil
	pod.Spec.Volumes[1].Ephemeral.VolumeClaimTemplate.Spec = corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	// The kubelet's status: IPs, QoS class and conditions the cache does not hold.
	written := pod.DeepCopy()
	written.Status = fullPod().Status
	written.Status.NominatedNodeName, written.Status.StartTime = "", nil
	written.Status.ContainerStatuses, written.Status.InitContainerStatuses, written.Status.EphemeralContainerStatuses = nil, nil, nil
	if err := c.Status().Patch(ctx, written, client.MergeFrom(pod)); err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Annotations: map[string]string{LastAppliedAnnotation: "{}"}},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"app:1"}, SizeBytes: 1}}}}
	if err := c.Create(ctx, node); err != nil {
		t.Fatal(err)
	}

	// As lifecycle's nomination does: a status merge patch of the nominated node name.
	cached := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), cached); err != nil {
		t.Fatal(err)
	}
	if _, err := TransformForCache(cached); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(cached.DeepCopy())
	cached.Status.NominatedNodeName = "node-a"
	if err := c.Status().Patch(ctx, cached, patch); err != nil {
		t.Fatal(err)
	}
	// As the termination and disruption controllers do: a taint change with an optimistic lock.
	cachedNode := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: "node-a"}, cachedNode); err != nil {
		t.Fatal(err)
	}
	if _, err := TransformForCache(cachedNode); err != nil {
		t.Fatal(err)
	}
	base := cachedNode.DeepCopy()
	cachedNode.Spec.Taints = append(cachedNode.Spec.Taints, corev1.Taint{Key: karpv1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule})
	if err := c.Patch(ctx, cachedNode, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		t.Fatal(err)
	}

	live := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), live); err != nil {
		t.Fatal(err)
	}
	if live.Status.NominatedNodeName != "node-a" {
		t.Errorf("nominatedNodeName %q, want node-a", live.Status.NominatedNodeName)
	}
	if live.Status.PodIP != "10.1.0.7" || len(live.Status.PodIPs) != 1 || live.Status.QOSClass != corev1.PodQOSBurstable || len(live.Status.Conditions) != 3 ||
		live.Spec.SecurityContext == nil || live.Spec.SecurityContext.RunAsNonRoot == nil || len(live.Spec.ReadinessGates) != 1 {
		t.Errorf("the patch changed what the cache does not hold: status %+v, security context %v, readiness gates %v",
			live.Status, live.Spec.SecurityContext, live.Spec.ReadinessGates)
	}
	if diff := cmp.Diff(pod.Spec.Containers[0].Env, live.Spec.Containers[0].Env); diff != "" || len(live.Spec.Volumes) != 3 ||
		live.Annotations[LastAppliedAnnotation] != pod.Annotations[LastAppliedAnnotation] || len(live.ManagedFields) == 0 {
		t.Errorf("the patch changed what the cache does not hold: env diff %s, %d volumes, annotations %v, %d managedFields entries",
			diff, len(live.Spec.Volumes), live.Annotations, len(live.ManagedFields))
	}
	liveNode := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: "node-a"}, liveNode); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, taint := range liveNode.Spec.Taints {
		keys[taint.Key] = true
	}
	if !keys["k"] || !keys[karpv1.DisruptedTaintKey] || len(liveNode.Status.Images) != 1 || liveNode.Annotations[LastAppliedAnnotation] != "{}" {
		t.Errorf("node after the patch: taints %v, images %v, annotations %v", liveNode.Spec.Taints, liveNode.Status.Images, liveNode.Annotations)
	}
}

// TestTransformForCacheKeepsStartTimeForDoNotDisrupt: a pod with karpenter.sh/do-not-disrupt keeps its start time
// (a duration value counts from it); other pods drop it.
func TestTransformForCacheKeepsStartTimeForDoNotDisrupt(t *testing.T) {
	started := metav1.NewTime(time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC))
	for _, tc := range []struct {
		annotations map[string]string
		want        *metav1.Time
	}{
		{map[string]string{karpv1.DoNotDisruptAnnotationKey: "10m"}, &started},
		{nil, nil},
	} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}, Status: corev1.PodStatus{StartTime: started.DeepCopy()}}
		out, err := TransformForCache(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := out.(*corev1.Pod).Status.StartTime; !cmp.Equal(tc.want, got) {
			t.Errorf("annotations %v: start time %v, want %v", tc.annotations, got, tc.want)
		}
	}
}
