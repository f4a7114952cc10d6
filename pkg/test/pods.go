package test

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// PodBuilder builds a Pod for tests: test.Pod("web").Requests("1", "2Gi").Obj().
type PodBuilder struct{ pod *corev1.Pod }

// Pod starts a pod in the "default" namespace with one container and no requests.
func Pod(name string) *PodBuilder {
	return &PodBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
		},
	}}
}

// Namespace sets the namespace.
func (b *PodBuilder) Namespace(ns string) *PodBuilder { b.pod.Namespace = ns; return b }

// Image sets the first container's image.
func (b *PodBuilder) Image(image string) *PodBuilder {
	b.pod.Spec.Containers[0].Image = image
	return b
}

// Requests sets the first container's cpu and memory requests ("" leaves one out).
func (b *PodBuilder) Requests(cpu, memory string) *PodBuilder {
	r := corev1.ResourceList{}
	if cpu != "" {
		r[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		r[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	b.pod.Spec.Containers[0].Resources.Requests = r
	return b
}

// Request sets one request of the first container, e.g. Request("nvidia.com/gpu", "1"); limits are set
// equal, as extended resources require.
func (b *PodBuilder) Request(name corev1.ResourceName, q string) *PodBuilder {
	c := &b.pod.Spec.Containers[0]
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	c.Resources.Requests[name] = resource.MustParse(q)
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	c.Resources.Limits[name] = resource.MustParse(q)
	return b
}

// NodeSelector adds a nodeSelector entry.
func (b *PodBuilder) NodeSelector(key, value string) *PodBuilder {
	if b.pod.Spec.NodeSelector == nil {
		b.pod.Spec.NodeSelector = map[string]string{}
	}
	b.pod.Spec.NodeSelector[key] = value
	return b
}

// Zone is NodeSelector(topology.kubernetes.io/zone, zone).
func (b *PodBuilder) Zone(zone string) *PodBuilder {
	return b.NodeSelector(corev1.LabelTopologyZone, zone)
}

// RequiredAffinity adds a required node-affinity term made of the given requirements.
func (b *PodBuilder) RequiredAffinity(reqs ...corev1.NodeSelectorRequirement) *PodBuilder {
	if b.pod.Spec.Affinity == nil {
		b.pod.Spec.Affinity = &corev1.Affinity{}
	}
	if b.pod.Spec.Affinity.NodeAffinity == nil {
		b.pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := b.pod.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = append(
		na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: reqs})
	return b
}

// Toleration adds a toleration; an empty value with Exists tolerates any value.
func (b *PodBuilder) Toleration(key string, op corev1.TolerationOperator, value string, effect corev1.TaintEffect) *PodBuilder {
	b.pod.Spec.Tolerations = append(b.pod.Spec.Tolerations, corev1.Toleration{Key: key, Operator: op, Value: value, Effect: effect})
	return b
}

// OwnedBy adds a controller ownerReference of the given kind (e.g. "DaemonSet", "ReplicaSet").
func (b *PodBuilder) OwnedBy(apiVersion, kind, name string) *PodBuilder {
	b.pod.OwnerReferences = append(b.pod.OwnerReferences, metav1.OwnerReference{
		APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + name), Controller: ptr.To(true),
	})
	return b
}

// NodeName binds the pod to a node.
func (b *PodBuilder) NodeName(node string) *PodBuilder { b.pod.Spec.NodeName = node; return b }

// Phase sets status.phase.
func (b *PodBuilder) Phase(p corev1.PodPhase) *PodBuilder { b.pod.Status.Phase = p; return b }

// Unschedulable sets the PodScheduled=False, reason Unschedulable condition the kube-scheduler writes.
func (b *PodBuilder) Unschedulable() *PodBuilder {
	b.pod.Status.Phase = corev1.PodPending
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/0 nodes are available",
	})
	return b
}

// Obj returns the pod.
func (b *PodBuilder) Obj() *corev1.Pod { return b.pod.DeepCopy() }

// Spread adds a topology spread constraint over key selecting the pods with the labels matchLabels.
func (b *PodBuilder) Spread(key string, maxSkew int32, when corev1.UnsatisfiableConstraintAction, matchLabels map[string]string) *PodBuilder {
	b.pod.Spec.TopologySpreadConstraints = append(b.pod.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when,
		LabelSelector: &metav1.LabelSelector{MatchLabels: matchLabels},
	})
	return b
}

// Priority sets spec.priority.
func (b *PodBuilder) Priority(p int32) *PodBuilder { b.pod.Spec.Priority = ptr.To(p); return b }
