package deps

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// HeartbeatOnly reports whether an update of a Node changed nothing but what a kubelet's status heartbeat
// changes: the resource version, managed fields, the conditions' heartbeat times and the image list. A kubelet
// reports a Node's status every 5 minutes at least (kwok on the local stack every 4 to 6): 17 updates a second at
// 5,000 nodes, none of which a controller reading the Node's labels, taints, conditions or resources acts on.
// A condition whose transition time moved while its status, reason and message stayed is no transition either:
// kwok stamps a new transition time at every heartbeat, and a kubelet's conditions only move it with their status.
// Objects that are not Nodes are never heartbeats.
func HeartbeatOnly(old, cur client.Object) bool {
	o, ok1 := old.(*corev1.Node)
	n, ok2 := cur.(*corev1.Node)
	if !ok1 || !ok2 {
		return false
	}
	if o.UID != n.UID || o.Generation != n.Generation || !o.DeletionTimestamp.Equal(n.DeletionTimestamp) ||
		!maps.Equal(o.Labels, n.Labels) || !maps.Equal(o.Annotations, n.Annotations) ||
		!slices.Equal(o.Finalizers, n.Finalizers) || !equality.Semantic.DeepEqual(o.OwnerReferences, n.OwnerReferences) ||
		!equality.Semantic.DeepEqual(o.Spec, n.Spec) {
		return false
	}
	if !slices.EqualFunc(o.Status.Conditions, n.Status.Conditions, func(a, b corev1.NodeCondition) bool {
		return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message
	}) {
		return false
	}
	os, ns := o.Status, n.Status // shallow copies, to leave out what was compared or is not read
	os.Conditions, ns.Conditions, os.Images, ns.Images = nil, nil, nil, nil
	return equality.Semantic.DeepEqual(os, ns)
}

// NotHeartbeat returns a predicate passing every event but a Node's heartbeat update (HeartbeatOnly).
func NotHeartbeat() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return !HeartbeatOnly(e.ObjectOld, e.ObjectNew) }}
}
