package operator

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// LastAppliedAnnotation is the copy of the whole object `kubectl apply` keeps in an annotation.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// NewCacheTransform returns the informer caches' transform: TransformForCache, then the pods, nodes and
// NodeClaims share the values they hold alike (labels, owners, requests, tolerations, spread constraints,
// requirements, capacity, strings such as the namespace and node name) with those cached before them. It is
// safe for concurrent use.
func NewCacheTransform() func(any) (any, error) {
	in := newInterner()
	return func(obj any) (any, error) {
		obj, err := TransformForCache(obj)
		if err != nil {
			return obj, err
		}
		switch o := obj.(type) {
		case *corev1.Pod:
			in.pod(o)
		case *corev1.Node:
			in.node(o)
		case *karpv1.NodeClaim:
			in.nodeClaim(o)
		}
		return obj, nil
	}
}

// TransformForCache trims an object before the informer cache stores it, keeping what the controllers read.
// Every object loses its managedFields and its last-applied-configuration annotation. Pods keep, of their
// containers, the name, resources, host ports and restart policy (sidecars), and of their volumes those that
// claim storage (PersistentVolumeClaim, ephemeral); they lose the parts of the spec no controller reads (security
// context, DNS settings, host aliases, image pull secrets, readiness gates). Of their status they keep the phase,
// the nominated node, the PodScheduled condition and the container statuses' name, state, readiness and restarts.
// Nodes lose their image list. The controllers write through patches computed between two copies of
// the cached object (or read the live object first), so what is stripped here is never written back.
//
// It changes the object it is given, which the informer has just decoded, and returns it.
func TransformForCache(in any) (any, error) {
	obj, err := meta.Accessor(in)
	if err != nil {
		return in, nil // e.g. a tombstone: left as it is
	}
	// Nil-checked: setting managedFields of an object that has none would allocate.
	if obj.GetManagedFields() != nil {
		obj.SetManagedFields(nil)
	}
	if a := obj.GetAnnotations(); a != nil {
		if _, ok := a[LastAppliedAnnotation]; ok {
			delete(a, LastAppliedAnnotation)
		}
	}
	switch o := in.(type) {
	case *corev1.Pod:
		trimPod(o)
	case *corev1.Node:
		o.Status.Images = nil
	}
	return in, nil
}

func trimPod(p *corev1.Pod) {
	for i := range p.Spec.InitContainers {
		p.Spec.InitContainers[i] = trimContainer(p.Spec.InitContainers[i])
	}
	for i := range p.Spec.Containers {
		p.Spec.Containers[i] = trimContainer(p.Spec.Containers[i])
	}
	// Ephemeral containers request no resources and are never scheduled.
	p.Spec.EphemeralContainers = nil
	var volumes []corev1.Volume
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			volumes = append(volumes, v)
		}
	}
	p.Spec.Volumes = volumes
	p.Spec.SecurityContext, p.Spec.DNSConfig, p.Spec.HostAliases, p.Spec.ImagePullSecrets, p.Spec.ReadinessGates = nil, nil, nil, nil, nil
	var started *metav1.Time
	if _, ok := p.Annotations[karpv1.DoNotDisruptAnnotationKey]; ok {
		// karpenter.sh/do-not-disrupt: <duration> counts from the pod's start.
		started = p.Status.StartTime
	}
	p.Status = corev1.PodStatus{
		Phase:                 p.Status.Phase,
		StartTime:             started,
		NominatedNodeName:     p.Status.NominatedNodeName,
		Conditions:            scheduledCondition(p.Status.Conditions),
		InitContainerStatuses: trimStatuses(p.Status.InitContainerStatuses),
		ContainerStatuses:     trimStatuses(p.Status.ContainerStatuses),
	}
}

// scheduledCondition keeps the PodScheduled condition (the kube-scheduler's verdict, which tells a pending pod
// that fits no node) and the Ready condition (karpenter_pods_state's ready label), the pod conditions a
// controller reads.
func scheduledCondition(in []corev1.PodCondition) []corev1.PodCondition {
	var out []corev1.PodCondition
	for _, c := range in {
		if c.Type == corev1.PodScheduled || c.Type == corev1.PodReady {
			out = append(out, c)
		}
	}
	return out
}

// trimContainer keeps what scheduling and disruption read of a container.
func trimContainer(c corev1.Container) corev1.Container {
	var ports []corev1.ContainerPort
	for _, p := range c.Ports {
		if p.HostPort > 0 {
			ports = append(ports, p)
		}
	}
	return corev1.Container{Name: c.Name, Resources: c.Resources, Ports: ports, RestartPolicy: c.RestartPolicy}
}

func trimStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if in == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, s := range in {
		out[i] = corev1.ContainerStatus{Name: s.Name, State: s.State, Ready: s.Ready, RestartCount: s.RestartCount, Started: s.Started}
	}
	return out
}
