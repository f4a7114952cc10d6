//go:build bench

package rss

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The objects below are shaped like what a real cluster holds (kubelet node status with its image list,
// Deployment and DaemonSet pods with probes, env, the service account volume and a kubelet-written status),
// since what the controller caches per object is what this benchmark measures.

// nodeStatus is the part of a kubelet's node status the simulator does not write: conditions (Ready), the
// daemon endpoint and the images present on the node.
func nodeStatus(n *corev1.Node, now time.Time) {
	t := metav1.NewTime(now)
	cond := func(typ corev1.NodeConditionType, status corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: status, Reason: reason, Message: msg, LastHeartbeatTime: t, LastTransitionTime: t}
	}
	n.Status.Conditions = []corev1.NodeCondition{
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
	}
	n.Status.DaemonEndpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}}
	n.Status.Images = nil
	for i := range 30 {
		repo := fmt.Sprintf("123456789012.dkr.ecr.us-west-2.amazonaws.com/team-%02d/service-%02d", i%7, i)
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{
			Names:     []string{fmt.Sprintf("%s@sha256:%064x", repo, i*7919+1), fmt.Sprintf("%s:v1.%d.%d", repo, i, i*3)},
			SizeBytes: int64(20_000_000 + i*3_000_000),
		})
	}
}

// appPod is the i-th pod of a Deployment, bound to node.
func appPod(namespace, deployment, node string, i int) *corev1.Pod {
	hash := "7d9f8c6b5"
	labels := map[string]string{"app.kubernetes.io/name": deployment, "app.kubernetes.io/part-of": "shop",
		"app.kubernetes.io/version": "1.4.2", "pod-template-hash": hash}
	image := fmt.Sprintf("123456789012.dkr.ecr.us-west-2.amazonaws.com/shop/%s:1.4.2", deployment)
	var env []corev1.EnvVar
	for j := range 8 {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", j), Value: fmt.Sprintf("value-%d-for-%s", j, deployment)})
	}
	env = append(env, corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}})
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: fmt.Sprintf("%s-%s-%05d", deployment, hash, i), Labels: labels,
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
				"kubectl.kubernetes.io/restartedAt": "2026-11-20T10:00:00Z"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: deployment + "-" + hash,
				UID: "5b0c2f8e-6a1d-4f43-9a57-0d1f5c2b7e11", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name: "app", Image: image, Env: env,
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
					{Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("350m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}},
					PeriodSeconds: 5, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3},
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}},
					InitialDelaySeconds: 10, PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3},
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
					{Name: "config", MountPath: "/etc/shop"}},
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy: corev1.PullIfNotPresent,
			}},
			Volumes: []corev1.Volume{serviceAccountVolume(),
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: deployment}}}}},
			Tolerations: defaultTolerations(),
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
				WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": deployment}}}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, ServiceAccountName: "default",
			TerminationGracePeriodSeconds: ptr.To[int64](30), SchedulerName: corev1.DefaultSchedulerName,
			EnableServiceLinks: ptr.To(true), PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority), Priority: ptr.To[int32](0),
		},
	}
}

func serviceAccountVolume() corev1.Volume {
	return corev1.Volume{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](0o644),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}}
}

func defaultTolerations() []corev1.Toleration {
	return []corev1.Toleration{
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
	}
}

// daemonSet is a node agent with the last-applied-configuration annotation kubectl apply leaves.
func daemonSet(namespace string) *appsv1.DaemonSet {
	labels := map[string]string{"app.kubernetes.io/name": "node-agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "node-agent", Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       daemonPodSpec(""),
			},
		},
	}
	ds.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": fmt.Sprintf("%q", ds.Spec.String())}
	return ds
}

func daemonPodSpec(node string) corev1.PodSpec {
	spec := corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "agent", Image: "123456789012.dkr.ecr.us-west-2.amazonaws.com/infra/node-agent:2.1.0",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
			Env:       []corev1.EnvVar{{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
				{Name: "varlog", MountPath: "/var/log", ReadOnly: true}},
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			ImagePullPolicy: corev1.PullIfNotPresent,
		}},
		Volumes: []corev1.Volume{serviceAccountVolume(),
			{Name: "varlog", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}}},
		Tolerations:   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, ServiceAccountName: "default",
		TerminationGracePeriodSeconds: ptr.To[int64](30), SchedulerName: corev1.DefaultSchedulerName,
		PriorityClassName: "system-node-critical", Priority: ptr.To[int32](2000001000), EnableServiceLinks: ptr.To(true),
	}
	if node != "" {
		spec.NodeName = node
		// The DaemonSet controller pins each pod to its node with node affinity.
		spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}}}
	}
	return spec
}

// daemonPod is the DaemonSet's pod on node.
func daemonPod(ds *appsv1.DaemonSet, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: "node-agent-" + node, Labels: map[string]string{
			"app.kubernetes.io/name": "node-agent", "controller-revision-hash": "6c8b9d7f4", "pod-template-generation": "1"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Spec: daemonPodSpec(node),
	}
}

// runningStatus is the status a kubelet writes for a started pod.
func runningStatus(p *corev1.Pod, ip string, now time.Time) {
	t := metav1.NewTime(now)
	p.Status.Phase = corev1.PodRunning
	p.Status.HostIP, p.Status.PodIP = "10.0.0.1", ip
	p.Status.HostIPs, p.Status.PodIPs = []corev1.HostIP{{IP: "10.0.0.1"}}, []corev1.PodIP{{IP: ip}}
	p.Status.StartTime = &t
	p.Status.QOSClass = corev1.PodQOSBurstable
	for _, c := range []corev1.PodConditionType{"PodReadyToStartContainers", corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled} {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: t})
	}
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image + "@sha256:" + fmt.Sprintf("%064x", len(c.Image)),
			ContainerID: "containerd://" + fmt.Sprintf("%064x", len(p.Name)*7919), Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t}},
		})
	}
}

// unschedulable marks a pending pod as the kube-scheduler does when it finds no node.
func unschedulable(p *corev1.Pod, now time.Time) {
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/1000 nodes are available: 1000 Insufficient cpu.", LastTransitionTime: metav1.NewTime(now)}}
}
