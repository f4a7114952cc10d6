package hash

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/hashversion"
)

// Name is the controller's name in logs and metrics.
const Name = "nodeclass.hash"

// Hasher computes an EC2NodeClass's stamp. The AWS provider implements it.
type Hasher interface {
	// NodeClassStamp returns the hash of the class's launch-time fields and the version of the scheme.
	NodeClassStamp(nc *awsv1.EC2NodeClass) (hash, version string)
}

// Controller writes the hash annotations on EC2NodeClasses and moves their NodeClaims to the current scheme.
type Controller struct {
	kube   client.Client
	hasher Hasher
}

// NewController returns the controller, taking the hasher from the cloud provider in d. Register adds nothing when
// the cloud provider has none.
func NewController(d deps.Deps) *Controller {
	h, _ := cloudprovider.Find[Hasher](d.CloudProvider)
	return &Controller{kube: d.Client, hasher: h}
}

// New returns the controller with an explicit hasher (tests).
func New(kube client.Client, h Hasher) *Controller { return &Controller{kube: kube, hasher: h} }

// Register adds the controller to the manager.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	if c.hasher == nil {
		return nil
	}
	return builder.ControllerManagedBy(m).Named(Name).
		For(&awsv1.EC2NodeClass{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(c.nodeClassOfForeignClaim)).
		Complete(deps.RetryTransient(c))
}

// nodeClassOfForeignClaim maps a NodeClaim stamped in another scheme to its EC2NodeClass.
func (c *Controller) nodeClassOfForeignClaim(_ context.Context, o client.Object) []reconcile.Request {
	nc, ok := o.(*karpv1.NodeClaim)
	if !ok || nc.Spec.NodeClassRef == nil || nc.Spec.NodeClassRef.Group != awsv1.Group {
		return nil
	}
	if _, version := c.hasher.NodeClassStamp(&awsv1.EC2NodeClass{}); nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] == version || !launched(nc) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: nc.Spec.NodeClassRef.Name}}}
}

// Reconcile restamps the class's NodeClaims, then the class. A write rejected for a stale copy is retried shortly.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := c.reconcileOnce(ctx, req)
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	return res, err
}

func (c *Controller) reconcileOnce(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	class := &awsv1.EC2NodeClass{}
	if err := c.kube.Get(ctx, req.NamespacedName, class); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !class.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	hash, version := c.hasher.NodeClassStamp(class)
	owner := hashversion.Stamp{Hash: class.Annotations[awsv1.AnnotationEC2NodeClassHash], Version: class.Annotations[awsv1.AnnotationEC2NodeClassHashVersion]}
	current := hashversion.Stamp{Hash: hash, Version: version}
	// NodeClaims first: they are compared with the class's stamp as it was, which the patch below replaces.
	if err := c.restampNodeClaims(ctx, class.Name, owner, current); err != nil {
		return reconcile.Result{}, err
	}
	if owner == current {
		return reconcile.Result{}, nil
	}
	if err := mergeAnnotations(ctx, c.kube, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: class.Name}}, current); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("stamping ec2nodeclass %s: %w", class.Name, err))
	}
	log.FromContext(ctx).V(1).Info("updated ec2nodeclass hash", "ec2nodeclass", class.Name, "hash", hash)
	return reconcile.Result{}, nil
}

// restampNodeClaims moves the class's NodeClaims stamped in another scheme to the current one
// (hashversion.Restamp).
func (c *Controller) restampNodeClaims(ctx context.Context, class string, owner, current hashversion.Stamp) error {
	claims := &karpv1.NodeClaimList{}
	if err := c.kube.List(ctx, claims, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	for i := range claims.Items {
		nc := &claims.Items[i]
		ref := nc.Spec.NodeClassRef
		if ref == nil || ref.Group != awsv1.Group || ref.Name != class || !nc.DeletionTimestamp.IsZero() || !launched(nc) {
			continue
		}
		have := hashversion.Stamp{Hash: nc.Annotations[awsv1.AnnotationEC2NodeClassHash], Version: nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion]}
		if have.Version == current.Version {
			continue
		}
		stamp, drifted := hashversion.Restamp(have, owner, current)
		// Only onto the version read (see the NodePool hash controller): a copy from a cache behind this controller's
		// own restamp, compared with the class's new stamp, would otherwise lose a drifted stamp.
		target := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name, ResourceVersion: nc.ResourceVersion}}
		if err := mergeAnnotations(ctx, c.kube, target, stamp); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("restamping nodeclaim %s: %w", nc.Name, err)
		}
		log.FromContext(ctx).Info("restamped nodeclaim hash", "nodeclaim", nc.Name, "ec2nodeclass", class,
			"from-version", have.Version, "to-version", stamp.Version, "drifted", drifted)
	}
	return nil
}

// launched reports whether an instance was launched for the NodeClaim. One not launched yet is left alone: its
// launch stamps it with the class as it is then, and restamping every new NodeClaim before that was one write
// more per node of a scale-out (5,000 in a 5,000-node one).
func launched(nc *karpv1.NodeClaim) bool {
	return nc.Status.ProviderID != "" || nc.IsTrue(karpv1.ConditionTypeLaunched)
}

// mergeAnnotations sets the two hash annotations of obj with a JSON merge patch (no other field is written); when
// obj has a resource version, the patch applies only to that version (an optimistic-lock conflict otherwise).
func mergeAnnotations(ctx context.Context, kube client.Client, obj client.Object, s hashversion.Stamp) error {
	meta := map[string]any{"annotations": map[string]string{
		awsv1.AnnotationEC2NodeClassHash:        s.Hash,
		awsv1.AnnotationEC2NodeClassHashVersion: s.Version,
	}}
	if rv := obj.GetResourceVersion(); rv != "" {
		meta["resourceVersion"] = rv
	}
	raw, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	return kube.Patch(ctx, obj, client.RawPatch(types.MergePatchType, raw))
}
