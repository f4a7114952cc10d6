package readiness

import (
	"context"
	"fmt"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
)

// Name is the controller's name in logs and metrics.
const Name = "nodepool.readiness"

// Controller sets NodePool readiness conditions.
type Controller struct {
	deps deps.Deps
}

// NewController returns the controller.
func NewController(d deps.Deps) *Controller { return &Controller{deps: d} }

// Register adds the controller; EC2NodeClass changes enqueue the NodePools that reference them.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	return builder.ControllerManagedBy(m).Named(Name).
		For(&karpv1.NodePool{}).
		Watches(&awsv1.EC2NodeClass{}, handler.EnqueueRequestsFromMapFunc(c.nodeClassToNodePools)).
		Complete(deps.RetryTransient(c))
}

func (c *Controller) nodeClassToNodePools(ctx context.Context, o client.Object) []reconcile.Request {
	list := &karpv1.NodePoolList{}
	// Read only (names, references): the cache's objects, not copies.
	if err := c.deps.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, np := range list.Items {
		if ref := np.NodeClassRef(); ref != nil && ref.Name == o.GetName() && ref.Group == awsv1.Group {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: np.Name}})
		}
	}
	return out
}

// reconcileOnce evaluates the conditions.
func (c *Controller) reconcileOnce(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &karpv1.NodePool{}
	if err := c.deps.Client.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !np.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	stored := np.DeepCopy()
	if msg := Validate(np); msg != "" {
		np.SetFalse(karpv1.ConditionTypeValidationSucceeded, karpv1.ReasonValidationFailed, msg)
	} else {
		np.SetTrue(karpv1.ConditionTypeValidationSucceeded, karpv1.ReasonValidationSucceeded)
	}
	if err := c.nodeClassReady(ctx, np); err != nil {
		return reconcile.Result{}, err
	}
	c.registrationHealth(stored, np)
	if conditionsEqual(stored.Status.Conditions, np.Status.Conditions) && stored.Status.NodeClassObservedGeneration == np.Status.NodeClassObservedGeneration {
		return reconcile.Result{}, nil
	}
	// Only the changed conditions, each tested to be as read (deps.PatchNodePoolStatus).
	if err := deps.PatchNodePoolStatus(ctx, c.deps.Client, stored, np); err != nil {
		if apierrors.IsConflict(err) {
			// Another controller wrote the status first: start again from the newer object, quietly.
			return reconcile.Result{Requeue: true}, nil
		}
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching nodepool status: %w", err))
	}
	return reconcile.Result{}, nil
}

// RegistrationHealthUnknownMessage is the message of NodeRegistrationHealthy while no NodeClaim launched since the
// NodePool or its node class last changed has registered or failed to.
const RegistrationHealthUnknownMessage = "no NodeClaim launched since the NodePool or its node class last changed has registered a Node or failed to yet"

// registrationHealth starts NodeRegistrationHealthy over (Unknown, and the outcomes recorded so far forgotten) when
// the NodePool is new or its spec or its node class changed since the condition was last set; the NodeClaim
// lifecycle sets it True or False from the outcomes of the launches that follow. After a restart, the condition
// is all there is of the outcomes recorded before: it seeds the record.
func (c *Controller) registrationHealth(stored, np *karpv1.NodePool) {
	rh := c.deps.RegistrationHealth
	if rh == nil {
		return
	}
	cond := np.GetCondition(karpv1.ConditionTypeNodeRegistrationHealthy)
	if cond != nil && rh.Status(np.UID) == deps.RegistrationUnknown {
		switch cond.Status {
		case metav1.ConditionTrue:
			rh.Set(np.UID, deps.RegistrationHealthy)
		case metav1.ConditionFalse:
			rh.Set(np.UID, deps.RegistrationUnhealthy)
		}
	}
	if cond == nil || cond.ObservedGeneration != np.Generation ||
		stored.Status.NodeClassObservedGeneration != np.Status.NodeClassObservedGeneration {
		np.SetCondition(karpv1.ConditionTypeNodeRegistrationHealthy, metav1.ConditionUnknown, karpv1.ReasonUnknown, RegistrationHealthUnknownMessage)
		rh.Set(np.UID, deps.RegistrationUnknown)
	}
}

func (c *Controller) nodeClassReady(ctx context.Context, np *karpv1.NodePool) error {
	ref := np.NodeClassRef()
	if ref == nil {
		np.SetFalse(karpv1.ConditionTypeNodeClassReady, karpv1.ReasonNodeClassNotFound, "spec.template.spec.nodeClassRef is not set")
		return nil
	}
	if ref.Group != awsv1.Group || ref.Kind != "EC2NodeClass" {
		np.SetFalse(karpv1.ConditionTypeNodeClassReady, karpv1.ReasonNodeClassNotFound,
			fmt.Sprintf("node class kind %s.%s is not supported; use EC2NodeClass.%s", ref.Kind, ref.Group, awsv1.Group))
		return nil
	}
	nc := &awsv1.EC2NodeClass{}
	if err := c.deps.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, nc); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("getting EC2NodeClass %s: %w", ref.Name, err)
		}
		np.SetFalse(karpv1.ConditionTypeNodeClassReady, karpv1.ReasonNodeClassNotFound, fmt.Sprintf("EC2NodeClass %q not found", ref.Name))
		return nil
	}
	np.Status.NodeClassObservedGeneration = nc.Generation
	ready := nc.GetCondition(karpv1.ConditionTypeReady)
	switch {
	case !nc.DeletionTimestamp.IsZero():
		np.SetFalse(karpv1.ConditionTypeNodeClassReady, karpv1.ReasonNotReady, fmt.Sprintf("EC2NodeClass %q is being deleted", ref.Name))
	case ready == nil:
		np.SetCondition(karpv1.ConditionTypeNodeClassReady, metav1.ConditionUnknown, karpv1.ReasonUnknown,
			fmt.Sprintf("EC2NodeClass %q has no Ready condition yet", ref.Name))
	case ready.Status == metav1.ConditionTrue:
		np.SetTrue(karpv1.ConditionTypeNodeClassReady, karpv1.ReasonNodeClassReady)
	default:
		np.SetFalse(karpv1.ConditionTypeNodeClassReady, karpv1.ReasonNotReady,
			fmt.Sprintf("EC2NodeClass %q is not ready: %s", ref.Name, ready.Message))
	}
	return nil
}

// Validate returns why the NodePool's template cannot be used, or "". The API server's CEL rules reject the same
// keys on create and update, but a NodePool can hold keys they never checked: one stored before a rule existed, or
// kept through an update by validation ratcheting (unchanged fields are not validated again). This repeats the
// checks with the rules the CRD is generated from (the NodePool requirement policy, which also rejects
// karpenter.sh/nodepool) and label key syntax.
func Validate(np *karpv1.NodePool) string {
	policy := awsv1.LabelPolicy()
	var problems []string
	for _, r := range np.Spec.Template.Spec.Requirements {
		if err := validateKey(r.Key, policy.ValidateNodePoolRequirementKey); err != nil {
			problems = append(problems, "requirements: "+err.Error())
		}
	}
	for k := range np.Spec.Template.Labels {
		if err := validateKey(k, policy.ValidateTemplateLabelKey); err != nil {
			problems = append(problems, "template labels: "+err.Error())
		}
	}
	sort.Strings(problems)
	return strings.Join(problems, "; ")
}

// validateKey checks a label key's syntax, then the policy.
func validateKey(key string, policy func(string) error) error {
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return fmt.Errorf("label key %q is not valid: %s", key, strings.Join(errs, "; "))
	}
	return policy(key)
}

func conditionsEqual(a, b []metav1.Condition) bool {
	strip := func(in []metav1.Condition) []metav1.Condition {
		out := make([]metav1.Condition, len(in))
		for i, c := range in {
			c.LastTransitionTime = metav1.Time{}
			out[i] = c
		}
		return out
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}

// Reconcile runs reconcileOnce. A write rejected for a stale copy (optimistic-lock conflict) is retried shortly
// instead of being reported as an error; a result with an error drops the result, as controller-runtime does.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := c.reconcileOnce(ctx, req)
	switch {
	case apierrors.IsConflict(err):
		return reconcile.Result{RequeueAfter: conflictRequeue}, nil
	case err != nil:
		return reconcile.Result{}, err
	}
	return res, nil
}

// conflictRequeue is how soon a pass that hit a stale copy runs again.
const conflictRequeue = 100 * time.Millisecond
