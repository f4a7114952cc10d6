package test

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// DrainPodWrapper builds pods for drain and termination tests.
type DrainPodWrapper struct{ pod corev1.Pod }

// DrainPod starts a running pod in namespace "default" bound to node "node-1", with a zero grace period.
func DrainPod(name string) *DrainPodWrapper {
	zero := int64(0)
	return &DrainPodWrapper{pod: corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{
			NodeName:                      "node-1",
			TerminationGracePeriodSeconds: &zero,
			Containers:                    []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}}
}

// Namespace sets the namespace.
func (w *DrainPodWrapper) Namespace(ns string) *DrainPodWrapper { w.pod.Namespace = ns; return w }

// Node binds the pod to a node.
func (w *DrainPodWrapper) Node(name string) *DrainPodWrapper { w.pod.Spec.NodeName = name; return w }

// Labels adds labels.
func (w *DrainPodWrapper) Labels(kv ...string) *DrainPodWrapper {
	if w.pod.Labels == nil {
		w.pod.Labels = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		w.pod.Labels[kv[i]] = kv[i+1]
	}
	return w
}

// Annotation adds an annotation.
func (w *DrainPodWrapper) Annotation(k, v string) *DrainPodWrapper {
	if w.pod.Annotations == nil {
		w.pod.Annotations = map[string]string{}
	}
	w.pod.Annotations[k] = v
	return w
}

// DaemonSet makes a DaemonSet the pod's controller.
func (w *DrainPodWrapper) DaemonSet(name string) *DrainPodWrapper {
	return w.owner("apps/v1", "DaemonSet", name)
}

// ReplicaSet makes a ReplicaSet the pod's controller.
func (w *DrainPodWrapper) ReplicaSet(name string) *DrainPodWrapper {
	return w.owner("apps/v1", "ReplicaSet", name)
}

func (w *DrainPodWrapper) owner(apiVersion, kind, name string) *DrainPodWrapper {
	yes := true
	w.pod.OwnerReferences = append(w.pod.OwnerReferences, metav1.OwnerReference{
		APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + kind + "-" + name), Controller: &yes,
	})
	return w
}

// Static marks the pod as the mirror of a static pod.
func (w *DrainPodWrapper) Static() *DrainPodWrapper {
	return w.Annotation(corev1.MirrorPodAnnotationKey, "mirror")
}

// PriorityClass sets the priority class name (e.g. system-cluster-critical).
func (w *DrainPodWrapper) PriorityClass(name string) *DrainPodWrapper {
	w.pod.Spec.PriorityClassName = name
	return w
}

// DoNotDisrupt adds karpenter.sh/do-not-disrupt: "true".
func (w *DrainPodWrapper) DoNotDisrupt() *DrainPodWrapper {
	return w.Annotation(karpv1.DoNotDisruptAnnotationKey, karpv1.DoNotDisruptValue)
}

// Grace sets terminationGracePeriodSeconds; negative leaves it unset (API default 30 s).
func (w *DrainPodWrapper) Grace(seconds int64) *DrainPodWrapper {
	if seconds < 0 {
		w.pod.Spec.TerminationGracePeriodSeconds = nil
		return w
	}
	w.pod.Spec.TerminationGracePeriodSeconds = &seconds
	return w
}

// Terminating marks the pod deleted, due to be gone at graceEnd (its deletionTimestamp).
func (w *DrainPodWrapper) Terminating(graceEnd time.Time) *DrainPodWrapper {
	t := metav1.NewTime(graceEnd)
	w.pod.DeletionTimestamp = &t
	return w
}

// Phase sets the pod phase.
func (w *DrainPodWrapper) Phase(p corev1.PodPhase) *DrainPodWrapper { w.pod.Status.Phase = p; return w }

// Toleration adds a toleration.
func (w *DrainPodWrapper) Toleration(t corev1.Toleration) *DrainPodWrapper {
	w.pod.Spec.Tolerations = append(w.pod.Spec.Tolerations, t)
	return w
}

// Claim mounts a PersistentVolumeClaim.
func (w *DrainPodWrapper) Claim(name string) *DrainPodWrapper {
	w.pod.Spec.Volumes = append(w.pod.Spec.Volumes, corev1.Volume{
		Name:         name,
		VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}},
	})
	return w
}

// NoUID clears the UID, for objects created through the API server.
func (w *DrainPodWrapper) NoUID() *DrainPodWrapper { w.pod.UID = ""; return w }

// Obj returns a copy of the pod.
func (w *DrainPodWrapper) Obj() *corev1.Pod { return w.pod.DeepCopy() }

// VolumeAttachmentFor returns a CSI VolumeAttachment of persistent volume pv to node.
func VolumeAttachmentFor(name, node, pv string) *storagev1.VolumeAttachment {
	return &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "ebs.csi.aws.com",
			NodeName: node,
			Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv},
		},
	}
}

// PDBFor returns a PodDisruptionBudget selecting pods with label app=<app>, with maxUnavailable 0.
func PDBFor(namespace, name, app string) *policyv1.PodDisruptionBudget {
	zero := intstr.FromInt32(0)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: &zero,
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
		},
	}
}

// TerminationNode returns a Node launched for a NodeClaim: provider ID, nodepool label and the termination
// finalizer.
func TerminationNode(name, providerID, nodePool string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Labels:     map[string]string{karpv1.NodePoolLabelKey: nodePool, corev1.LabelHostname: name},
			Finalizers: []string{karpv1.TerminationFinalizer},
		},
		Spec: corev1.NodeSpec{ProviderID: providerID},
	}
}

// TerminationNodeClaim returns a launched NodeClaim with the termination finalizer; tgp nil means no
// terminationGracePeriod. Its status (providerID, nodeName) must be written through the status subresource.
func TerminationNodeClaim(name, nodePool string, tgp *time.Duration) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Labels:     map[string]string{karpv1.NodePoolLabelKey: nodePool},
			Finalizers: []string{karpv1.TerminationFinalizer},
		},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{
				NodeSelectorRequirement: corev1.NodeSelectorRequirement{
					Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"},
				},
			}},
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
		},
	}
	if tgp != nil {
		nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: *tgp}
	}
	return nc
}
