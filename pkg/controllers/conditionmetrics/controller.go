// Package conditionmetrics feeds the status-condition and termination metrics of NodeClaims, NodePools, Nodes and
// EC2NodeClasses (metrics.ObjectConditions and metrics.ObjectChanges) from the informer caches.
package conditionmetrics

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/metrics"
)

// Name is the controller's name in logs.
const Name = "metrics.conditions"

// listTimeout bounds a scrape's cache read: a cache still syncing makes the scrape report nothing for the kind
// rather than hang.
const listTimeout = 2 * time.Second

// Controller sets the listers of the condition gauges and watches the kinds for condition changes and
// terminations.
type Controller struct{ deps deps.Deps }

// NewController returns the controller.
func NewController(d deps.Deps) *Controller { return &Controller{deps: d} }

// measuredKind is a measured kind with constructors of an empty object and list of it.
type measuredKind struct {
	kind    metrics.ObjectKind
	newObj  func() client.Object
	newList func() client.ObjectList
}

// kinds are the measured kinds.
func kinds() []measuredKind {
	return []measuredKind{
		{metrics.KindNodeClaim, func() client.Object { return &karpv1.NodeClaim{} }, func() client.ObjectList { return &karpv1.NodeClaimList{} }},
		{metrics.KindNodePool, func() client.Object { return &karpv1.NodePool{} }, func() client.ObjectList { return &karpv1.NodePoolList{} }},
		{metrics.KindNode, func() client.Object { return &corev1.Node{} }, func() client.ObjectList { return &corev1.NodeList{} }},
		{metrics.KindEC2NodeClass, func() client.Object { return &awsv1.EC2NodeClass{} }, func() client.ObjectList { return &awsv1.EC2NodeClassList{} }},
	}
}

// Register sets a lister a kind, reading the cache at each scrape, and adds an event handler a kind to its
// informer: an update records the condition changes (NodeClaims excepted: their status writes record them), a
// deletion the termination time.
func (c *Controller) Register(ctx context.Context, m manager.Manager) error {
	logger := log.FromContext(ctx).WithName(Name)
	for _, k := range kinds() {
		c.deps.Metrics.ObjectConditions.SetLister(k.kind, func() []metrics.ConditionedObject {
			lctx, cancel := context.WithTimeout(context.Background(), listTimeout)
			defer cancel()
			list := k.newList()
			if err := c.deps.Client.List(lctx, list, client.UnsafeDisableDeepCopy); err != nil {
				logger.V(1).Info("listing for the condition metrics failed; this scrape omits the kind", "kind", fmt.Sprintf("%T", list), "error", err.Error())
				return nil
			}
			return Conditioned(list)
		})
		inf, err := m.GetCache().GetInformer(ctx, k.newObj())
		if err != nil {
			return fmt.Errorf("getting the informer of %T for the condition metrics: %w", k.newObj(), err)
		}
		kind := k.kind
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			UpdateFunc: func(oldObj, newObj interface{}) {
				o, ok1 := oldObj.(client.Object)
				n, ok2 := newObj.(client.Object)
				// A Node's heartbeat changes no condition's status: nothing to record, and converting both
				// versions' conditions at each heartbeat of every node is not done.
				if ok1 && ok2 && !deps.HeartbeatOnly(o, n) {
					c.deps.Metrics.RecordConditionChange(kind, n.GetLabels(), conditions(o), conditions(n))
				}
			},
			DeleteFunc: func(obj interface{}) {
				if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = t.Obj
				}
				o, ok := obj.(client.Object)
				if !ok || o.GetDeletionTimestamp() == nil {
					return
				}
				c.deps.Metrics.RecordTermination(kind, o.GetLabels(), o.GetDeletionTimestamp().Time, c.deps.Clock.Now())
			},
		}); err != nil {
			return fmt.Errorf("watching %T for the condition metrics: %w", k.newObj(), err)
		}
	}
	return nil
}

// Conditioned is what the condition gauges read of the items of a NodeClaim, NodePool, Node or EC2NodeClass list.
func Conditioned(list client.ObjectList) []metrics.ConditionedObject {
	var out []metrics.ConditionedObject
	add := func(o client.Object) {
		c := metrics.ConditionedObject{Name: o.GetName(), Namespace: o.GetNamespace(), Labels: o.GetLabels(), Conditions: conditions(o)}
		if ts := o.GetDeletionTimestamp(); ts != nil {
			c.DeletionTimestamp = ts.Time
		}
		out = append(out, c)
	}
	switch l := list.(type) {
	case *karpv1.NodeClaimList:
		for i := range l.Items {
			add(&l.Items[i])
		}
	case *karpv1.NodePoolList:
		for i := range l.Items {
			add(&l.Items[i])
		}
	case *corev1.NodeList:
		for i := range l.Items {
			add(&l.Items[i])
		}
	case *awsv1.EC2NodeClassList:
		for i := range l.Items {
			add(&l.Items[i])
		}
	}
	return out
}

// conditions are an object's status conditions; a Node's as metav1.Conditions.
func conditions(o client.Object) []metav1.Condition {
	switch o := o.(type) {
	case *karpv1.NodeClaim:
		return o.Status.Conditions
	case *karpv1.NodePool:
		return o.Status.Conditions
	case *awsv1.EC2NodeClass:
		return o.Status.Conditions
	case *corev1.Node:
		out := make([]metav1.Condition, 0, len(o.Status.Conditions))
		for _, c := range o.Status.Conditions {
			out = append(out, metav1.Condition{Type: string(c.Type), Status: metav1.ConditionStatus(c.Status),
				Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime})
		}
		return out
	}
	return nil
}
