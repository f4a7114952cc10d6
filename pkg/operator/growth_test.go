package operator

import (
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// benchPodVersions returns the versions the API server sends of one pod of a Deployment as a cluster grows: bound
// at creation, started, then adopted by its ReplicaSet, each with the managed fields, service account volume,
// default tolerations and status the API server, kubelet (kwok) and admission add.
func benchPodVersions(i int) [][]byte {
	created := metav1.NewTime(time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond))
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "bench-scale", Name: fmt.Sprintf("app-%02d-%05d", i%20, i), UID: types.UID(fmt.Sprintf("7d0c3c4e-8f5c-4e8a-9c1f-%012d", i)),
			ResourceVersion: fmt.Sprint(100000 + 3*i), CreationTimestamp: created,
			Labels: map[string]string{"app": fmt.Sprintf("app-%02d", i%20), "bench": "base"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &created,
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:bench":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:nodeName":{},"f:nodeSelector":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}`)}}},
		},
		Spec: corev1.PodSpec{
			NodeName: fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", i/10/250, i/10%250), NodeSelector: map[string]string{"karpenter.sh/nodepool": "bench"},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: req},
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent,
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access-x7k2p", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				}, DefaultMode: ptr.To[int32](420)}}}},
			RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To[int64](30), DNSPolicy: corev1.DNSClusterFirst,
			ServiceAccountName: "default", DeprecatedServiceAccount: "default", SecurityContext: &corev1.PodSecurityContext{},
			SchedulerName: "default-scheduler", Priority: ptr.To[int32](0), EnableServiceLinks: ptr.To(true), PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority),
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable},
	}
	var out [][]byte
	add := func() {
		b, err := json.Marshal(p)
		if err != nil {
			panic(err)
		}
		out = append(out, b)
	}
	add()
	started := metav1.NewTime(created.Add(2 * time.Second))
	p.ResourceVersion = fmt.Sprint(100001 + 3*i)
	p.ManagedFields = append(p.ManagedFields, metav1.ManagedFieldsEntry{Manager: "kwok", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &started,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{".":{},"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}}},"f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:phase":{},"f:podIP":{},"f:podIPs":{},"f:startTime":{}}}`)}})
	ip := fmt.Sprintf("10.%d.%d.%d", 64+i/65536, i/256%256, i%256)
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable, StartTime: &started,
		HostIP: "10.0.1.7", HostIPs: []corev1.HostIP{{IP: "10.0.1.7"}}, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: started},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: started},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: created},
		},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "registry.k8s.io/pause:3.10", ImageID: "registry.k8s.io/pause@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a",
			ContainerID: "containerd://" + fmt.Sprintf("%064d", i), Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}},
	}
	add()
	p.ResourceVersion = fmt.Sprint(100002 + 3*i)
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: fmt.Sprintf("app-%02d", i%20),
		UID: types.UID(fmt.Sprintf("0d6f1b8e-3a2c-4c7e-b1a4-%012d", i%20)), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	add()
	return out
}

// heapFigures collects twice and returns the heap's live bytes and the bytes of the spans holding them.
func heapFigures() (alloc, inuse uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, m.HeapInuse
}

// BenchmarkCacheGrowth decodes the versions a growing cluster's pods go through, in the order a watch delivers
// them (every pod created, then started, then adopted), runs the cache transform on each and keeps the newest
// version of each pod, as an informer's store does. It reports the bytes a cached pod holds (live heap) and
// the heap's spans per cached pod: the spans a cluster's growth leaves partly empty.
func BenchmarkCacheGrowth(b *testing.B) {
	const pods = 20000
	versions := make([][][]byte, pods)
	for i := range versions {
		versions[i] = benchPodVersions(i)
	}
	for b.Loop() {
		b.StopTimer()
		alloc0, inuse0 := heapFigures()
		b.StartTimer()
		transform := NewCacheTransform()
		store := make(map[string]*corev1.Pod, pods)
		for v := range 3 {
			for i := range versions {
				p := &corev1.Pod{}
				if err := json.Unmarshal(versions[i][v], p); err != nil {
					b.Fatal(err)
				}
				obj, err := transform(p)
				if err != nil {
					b.Fatal(err)
				}
				store[p.Namespace+"/"+p.Name] = obj.(*corev1.Pod)
			}
		}
		b.StopTimer()
		alloc, inuse := heapFigures()
		b.ReportMetric(float64(alloc-alloc0)/pods, "held-B/pod")
		b.ReportMetric(float64(inuse-inuse0)/pods, "spans-B/pod")
		runtime.KeepAlive(store)
		runtime.KeepAlive(transform)
		b.StartTimer()
	}
}
