package capacitybuffer

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1beta1 "github.com/dovetail/dovetail/api/autoscaling/v1beta1"
	core "github.com/dovetail/dovetail/pkg/capacitybuffer"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
)

// Name is the controller's name in logs and metrics.
const Name = "capacitybuffer"

// resync re-resolves every buffer this often (a scalableRef workload's replicas change without the buffer).
const resync = 30 * time.Second

// Controller resolves CapacityBuffers.
type Controller struct {
	deps deps.Deps
}

// NewController returns the controller; d.Buffers receives the virtual pods.
func NewController(d deps.Deps) *Controller { return &Controller{deps: d} }

// Register adds the controller: buffers, and the PodTemplates and workloads they reference.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	return builder.ControllerManagedBy(m).Named(Name).
		For(&autoscalingv1beta1.CapacityBuffer{}).
		Watches(&corev1.PodTemplate{}, handler.EnqueueRequestsFromMapFunc(c.referencing("", "PodTemplate"))).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(c.referencing("apps", autoscalingv1beta1.KindDeployment))).
		Watches(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(c.referencing("apps", autoscalingv1beta1.KindStatefulSet))).
		Watches(&appsv1.ReplicaSet{}, handler.EnqueueRequestsFromMapFunc(c.referencing("apps", autoscalingv1beta1.KindReplicaSet))).
		Complete(deps.RetryTransient(reconcile.Func(c.Reconcile)))
}

// referencing maps a PodTemplate or workload to the buffers of its namespace that name it.
func (c *Controller) referencing(group, kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		list := &autoscalingv1beta1.CapacityBufferList{}
		if err := c.deps.Client.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, cb := range list.Items {
			refs := (kind == "PodTemplate" && cb.Spec.PodTemplateRef != nil && cb.Spec.PodTemplateRef.Name == o.GetName()) ||
				(cb.Spec.ScalableRef != nil && cb.Spec.ScalableRef.Kind == kind && scalableGroup(cb.Spec.ScalableRef) == group && cb.Spec.ScalableRef.Name == o.GetName())
			if refs {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: cb.Namespace, Name: cb.Name}})
			}
		}
		return out
	}
}

// scalableGroup is the reference's API group; empty means "apps", as upstream reads it.
func scalableGroup(r *autoscalingv1beta1.ScalableRef) string {
	if r.APIGroup == "" {
		return "apps"
	}
	return r.APIGroup
}

// Reconcile resolves one buffer, publishes its virtual pods and writes its status.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := req.Namespace + "/" + req.Name
	cb := &autoscalingv1beta1.CapacityBuffer{}
	if err := c.deps.Client.Get(ctx, req.NamespacedName, cb); err != nil {
		if apierrors.IsNotFound(err) {
			c.deps.Buffers.Delete(key)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("getting capacitybuffer %s: %w", key, err)
	}
	if !cb.DeletionTimestamp.IsZero() {
		c.deps.Buffers.Delete(key)
		return reconcile.Result{}, nil
	}
	now := metav1.NewTime(c.deps.Clock.Now())
	src, reason, err := c.resolve(ctx, cb)
	var status autoscalingv1beta1.CapacityBufferStatus
	switch {
	case err != nil && reason == "":
		return reconcile.Result{}, err
	case err != nil:
		status = core.Unresolved(cb, reason, err.Error(), now)
	default:
		status = core.Resolved(cb, src, now)
	}
	stored := cb.DeepCopy()
	cb.Status = status
	// The provisioner reads the pods before the status is written: its pass after the status event sees them.
	if pods := core.VirtualPods(cb, src.Template); len(pods) > 0 {
		c.deps.Buffers.Set(key, pods)
	} else {
		c.deps.Buffers.Delete(key)
	}
	if !equality.Semantic.DeepEqual(stored.Status, cb.Status) {
		log.FromContext(ctx).V(1).Info("updating capacitybuffer status", "capacitybuffer", key, "replicas", cb.Status.Replicas)
		if err := c.deps.Client.Status().Patch(ctx, cb, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{Requeue: true}, nil
			}
			return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching capacitybuffer %s status: %w", key, err))
		}
	}
	return reconcile.Result{RequeueAfter: resync}, nil
}

// resolve finds the buffer's pod shape. A reference the user got wrong returns the condition reason with the
// error; an API failure returns no reason (retried).
func (c *Controller) resolve(ctx context.Context, cb *autoscalingv1beta1.CapacityBuffer) (core.Source, string, error) {
	ns := cb.Namespace
	switch {
	case cb.Spec.PodTemplateRef != nil:
		pt := &corev1.PodTemplate{}
		if err := c.deps.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cb.Spec.PodTemplateRef.Name}, pt); err != nil {
			if apierrors.IsNotFound(err) {
				return core.Source{}, autoscalingv1beta1.ReasonPodTemplateNotFound, fmt.Errorf("PodTemplate %s/%s not found", ns, cb.Spec.PodTemplateRef.Name)
			}
			return core.Source{}, "", fmt.Errorf("getting PodTemplate %s/%s: %w", ns, cb.Spec.PodTemplateRef.Name, err)
		}
		return core.Source{Template: pt.Template, PodTemplateName: pt.Name, PodTemplateGeneration: pt.Generation}, "", nil
	case cb.Spec.ScalableRef != nil:
		ref := cb.Spec.ScalableRef
		if scalableGroup(ref) != "apps" {
			return core.Source{}, autoscalingv1beta1.ReasonResolutionFailed, fmt.Errorf("scalableRef API group %q is not supported (supported: apps)", ref.APIGroup)
		}
		var obj client.Object
		var get func() (corev1.PodTemplateSpec, *int32)
		switch ref.Kind {
		case autoscalingv1beta1.KindDeployment:
			d := &appsv1.Deployment{}
			obj, get = d, func() (corev1.PodTemplateSpec, *int32) { return d.Spec.Template, d.Spec.Replicas }
		case autoscalingv1beta1.KindStatefulSet:
			s := &appsv1.StatefulSet{}
			obj, get = s, func() (corev1.PodTemplateSpec, *int32) { return s.Spec.Template, s.Spec.Replicas }
		case autoscalingv1beta1.KindReplicaSet:
			r := &appsv1.ReplicaSet{}
			obj, get = r, func() (corev1.PodTemplateSpec, *int32) { return r.Spec.Template, r.Spec.Replicas }
		default:
			return core.Source{}, autoscalingv1beta1.ReasonResolutionFailed, fmt.Errorf("scalableRef kind %q is not supported (supported: Deployment, StatefulSet, ReplicaSet)", ref.Kind)
		}
		if err := c.deps.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return core.Source{}, autoscalingv1beta1.ReasonScalableRefNotFound, fmt.Errorf("%s %s/%s not found", ref.Kind, ns, ref.Name)
			}
			return core.Source{}, "", fmt.Errorf("getting %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
		}
		tpl, replicas := get()
		n := int32(1)
		if replicas != nil {
			n = *replicas
		}
		return core.Source{Template: tpl, WorkloadReplicas: &n}, "", nil
	default:
		return core.Source{}, autoscalingv1beta1.ReasonResolutionFailed, fmt.Errorf("neither podTemplateRef nor scalableRef is set")
	}
}
