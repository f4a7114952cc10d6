package clusterinput

import (
	"context"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// spreadSelectors deduces, for each of pods without topology spread constraints of its own, the selector its
// default constraints (SCHEDULER_CONFIG) take, from the Services of its namespace and its ReplicaSet,
// StatefulSet or ReplicationController, by pod key. Pods nothing selects are left out: they take no default. A
// controller that is gone contributes nothing, as in the kube-scheduler.
func spreadSelectors(ctx context.Context, d deps.Deps, pods []*corev1.Pod) (map[string]*metav1.LabelSelector, error) {
	var src scheduling.SelectorSources
	namespaces := map[string]bool{}
	owners := map[[3]string]bool{}
	for _, p := range pods {
		if p == nil || len(p.Spec.TopologySpreadConstraints) > 0 {
			continue
		}
		namespaces[p.Namespace] = true
		if o := metav1.GetControllerOfNoCopy(p); o != nil {
			owners[[3]string{o.Kind, p.Namespace, o.Name}] = true
		}
	}
	if len(namespaces) == 0 {
		return nil, nil
	}
	nsNames := make([]string, 0, len(namespaces))
	for ns := range namespaces {
		nsNames = append(nsNames, ns)
	}
	sort.Strings(nsNames)
	for _, ns := range nsNames {
		list := &corev1.ServiceList{}
		// Read only: the selectors are copied into the deduced selector.
		if err := d.Client.List(ctx, list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing services in %s: %w", ns, err)
		}
		for i := range list.Items {
			src.Services = append(src.Services, &list.Items[i])
		}
	}
	for o := range owners {
		key := client.ObjectKey{Namespace: o[1], Name: o[2]}
		var obj client.Object
		switch o[0] {
		case "ReplicaSet":
			obj = &appsv1.ReplicaSet{}
		case "StatefulSet":
			obj = &appsv1.StatefulSet{}
		case "ReplicationController":
			obj = &corev1.ReplicationController{}
		default:
			continue
		}
		if err := d.Client.Get(ctx, key, obj); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("getting %s %s: %w", o[0], key, err)
			}
			continue
		}
		switch o := obj.(type) {
		case *appsv1.ReplicaSet:
			src.ReplicaSets = append(src.ReplicaSets, o)
		case *appsv1.StatefulSet:
			src.StatefulSets = append(src.StatefulSets, o)
		case *corev1.ReplicationController:
			src.ReplicationControllers = append(src.ReplicationControllers, o)
		}
	}
	out := map[string]*metav1.LabelSelector{}
	for _, p := range pods {
		if p == nil || len(p.Spec.TopologySpreadConstraints) > 0 {
			continue
		}
		if sel := scheduling.DeduceSpreadSelector(p, src); sel != nil {
			out[solver.PodKey(p)] = sel
		}
	}
	return out, nil
}
