package scheduling

import (
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// SelectorSources are the objects a default topology spread selector is deduced from: the Services of the pods'
// namespaces and the controllers (ReplicaSets, StatefulSets, ReplicationControllers) that own them.
type SelectorSources struct {
	Services               []*corev1.Service
	ReplicaSets            []*appsv1.ReplicaSet
	StatefulSets           []*appsv1.StatefulSet
	ReplicationControllers []*corev1.ReplicationController
}

// DeduceSpreadSelector returns the label selector the kube-scheduler's PodTopologySpread plugin gives a default
// constraint of the pod: the selectors of the Services of its namespace that select it, merged as equality
// matches (a later Service's value wins on a shared key); then, when the pod's controller is a
// ReplicationController, its selector merged the same way, or when it is a ReplicaSet or StatefulSet, its
// selector's requirements added. Controllers are found by namespace and name, as the kube-scheduler's listers find
// them. Nil when nothing selects the pod: such a pod gets no default constraint.
func DeduceSpreadSelector(pod *corev1.Pod, src SelectorSources) *metav1.LabelSelector {
	match := map[string]string{}
	podLabels := labels.Set(pod.Labels)
	for _, svc := range src.Services {
		if svc == nil || svc.Namespace != pod.Namespace || svc.Spec.Selector == nil {
			continue
		}
		if labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
			for k, v := range svc.Spec.Selector {
				match[k] = v
			}
		}
	}
	var exprs []metav1.LabelSelectorRequirement
	if owner := metav1.GetControllerOfNoCopy(pod); owner != nil {
		if gv, err := schema.ParseGroupVersion(owner.APIVersion); err == nil {
			switch gv.WithKind(owner.Kind) {
			case corev1.SchemeGroupVersion.WithKind("ReplicationController"):
				for _, rc := range src.ReplicationControllers {
					if rc != nil && rc.Namespace == pod.Namespace && rc.Name == owner.Name {
						for k, v := range rc.Spec.Selector {
							match[k] = v
						}
						break
					}
				}
			case appsv1.SchemeGroupVersion.WithKind("ReplicaSet"):
				for _, rs := range src.ReplicaSets {
					if rs != nil && rs.Namespace == pod.Namespace && rs.Name == owner.Name {
						exprs = selectorRequirements(rs.Spec.Selector)
						break
					}
				}
			case appsv1.SchemeGroupVersion.WithKind("StatefulSet"):
				for _, ss := range src.StatefulSets {
					if ss != nil && ss.Namespace == pod.Namespace && ss.Name == owner.Name {
						exprs = selectorRequirements(ss.Spec.Selector)
						break
					}
				}
			}
		}
	}
	if len(match) == 0 && len(exprs) == 0 {
		return nil
	}
	sel := &metav1.LabelSelector{MatchExpressions: exprs}
	if len(match) > 0 {
		sel.MatchLabels = match
	}
	return sel
}

// selectorRequirements is a controller's selector as a list of requirements (matchLabels as single-value In),
// sorted by key so the deduced selector is the same on every pass.
func selectorRequirements(sel *metav1.LabelSelector) []metav1.LabelSelectorRequirement {
	if sel == nil {
		return nil
	}
	out := make([]metav1.LabelSelectorRequirement, 0, len(sel.MatchLabels)+len(sel.MatchExpressions))
	keys := make([]string, 0, len(sel.MatchLabels))
	for k := range sel.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{sel.MatchLabels[k]}})
	}
	for _, e := range sel.MatchExpressions {
		out = append(out, *e.DeepCopy())
	}
	return out
}

// withDefaultSpread returns the snapshot with the default constraints given to its pending pods that have no
// topology spread constraints of their own and a deduced selector (SpreadSelectors); those pods are copies, the
// snapshot given is left as it is. It returns snap itself when no pod takes a default.
func withDefaultSpread(snap *Snapshot) *Snapshot {
	if len(snap.DefaultSpread) == 0 || len(snap.SpreadSelectors) == 0 {
		return snap
	}
	var pods []*corev1.Pod
	for i, p := range snap.Pods {
		if p == nil || len(p.Spec.TopologySpreadConstraints) > 0 {
			continue
		}
		sel := snap.SpreadSelectors[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}]
		if sel == nil {
			continue
		}
		if pods == nil {
			pods = append([]*corev1.Pod(nil), snap.Pods...)
		}
		cp := *p
		cp.Spec = *p.Spec.DeepCopy()
		cp.Spec.TopologySpreadConstraints = make([]corev1.TopologySpreadConstraint, len(snap.DefaultSpread))
		for j := range snap.DefaultSpread {
			snap.DefaultSpread[j].DeepCopyInto(&cp.Spec.TopologySpreadConstraints[j])
			cp.Spec.TopologySpreadConstraints[j].LabelSelector = sel.DeepCopy()
		}
		pods[i] = &cp
	}
	if pods == nil {
		return snap
	}
	out := *snap
	out.Pods = pods
	return &out
}
