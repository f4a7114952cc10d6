package status

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
)

// Name is the controller's name in logs and metrics; each kind it watches runs as Name.<kind>.
const Name = "status"

// ReasonFinalized is the reason of the event emitted when a finalizer is removed from an object.
const ReasonFinalized = "Finalized"

// Condition is what the controller compares of a status condition.
type Condition struct {
	Type, Status, Reason, Message string
}

// Kind is one kind of object the controller watches: a name, a constructor and how to read its conditions.
type Kind struct {
	Name       string
	New        func() client.Object
	Conditions func(client.Object) []Condition
}

func fromMeta(conds []metav1.Condition) []Condition {
	out := make([]Condition, 0, len(conds))
	for _, c := range conds {
		out = append(out, Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	return out
}

// Kinds are the kinds whose transitions are announced.
func Kinds() []Kind {
	return []Kind{
		{Name: "nodeclaim", New: func() client.Object { return &karpv1.NodeClaim{} },
			Conditions: func(o client.Object) []Condition { return fromMeta(o.(*karpv1.NodeClaim).Status.Conditions) }},
		{Name: "nodepool", New: func() client.Object { return &karpv1.NodePool{} },
			Conditions: func(o client.Object) []Condition { return fromMeta(o.(*karpv1.NodePool).Status.Conditions) }},
		{Name: "ec2nodeclass", New: func() client.Object { return &awsv1.EC2NodeClass{} },
			Conditions: func(o client.Object) []Condition { return fromMeta(o.(*awsv1.EC2NodeClass).Status.Conditions) }},
		{Name: "node", New: func() client.Object { return &corev1.Node{} },
			Conditions: func(o client.Object) []Condition {
				var out []Condition
				for _, c := range o.(*corev1.Node).Status.Conditions {
					out = append(out, Condition{Type: string(c.Type), Status: string(c.Status), Reason: c.Reason, Message: c.Message})
				}
				return out
			}},
	}
}

// observation is what was last seen of an object: its UID, the status of each condition and its finalizers.
type observation struct {
	uid        types.UID
	statuses   map[string]string
	finalizers []string
}

// Controller announces the condition transitions and finalizer removals of one kind.
type Controller struct {
	deps deps.Deps
	kind Kind
	mu   sync.Mutex
	seen map[types.NamespacedName]observation
}

// NewKindController returns the controller of one kind.
func NewKindController(d deps.Deps, k Kind) *Controller {
	return &Controller{deps: d, kind: k, seen: map[types.NamespacedName]observation{}}
}

// Controllers are the controllers of every kind.
type Controllers []*Controller

// NewController returns the controllers of every kind of Kinds.
func NewController(d deps.Deps) Controllers {
	var out Controllers
	for _, k := range Kinds() {
		out = append(out, NewKindController(d, k))
	}
	return out
}

// Register registers the controller of each kind.
func (cs Controllers) Register(ctx context.Context, m manager.Manager) error {
	for _, c := range cs {
		if err := c.Register(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// Register watches the kind. A Node's heartbeat changes no condition status and no finalizer: it is not
// reconciled (at 5,000 nodes, 17 or more a second, each a copy of the Node).
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	return builder.ControllerManagedBy(m).Named(Name+"."+c.kind.Name).
		For(c.kind.New(), builder.WithPredicates(deps.NotHeartbeat())).Complete(c)
}

// Reconcile compares the object with what was last seen of it and emits an event for each condition whose status
// changed and each finalizer removed. The first sight of an object (after a start, or of a new object) only
// records it: transitions are those this process saw happen, so rapid or missed ones may go unannounced.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	o := c.kind.New()
	if err := c.deps.Client.Get(ctx, req.NamespacedName, o); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("getting %s %s: %w", c.kind.Name, req.Name, err)
		}
		c.mu.Lock()
		last, ok := c.seen[req.NamespacedName]
		delete(c.seen, req.NamespacedName)
		c.mu.Unlock()
		if ok {
			gone := c.kind.New()
			gone.SetName(req.Name)
			gone.SetNamespace(req.Namespace)
			gone.SetUID(last.uid)
			c.finalized(gone, last.finalizers, nil)
		}
		return reconcile.Result{}, nil
	}
	now := observation{uid: o.GetUID(), statuses: map[string]string{}, finalizers: o.GetFinalizers()}
	conds := c.kind.Conditions(o)
	for _, cond := range conds {
		now.statuses[cond.Type] = cond.Status
	}
	c.mu.Lock()
	last, ok := c.seen[req.NamespacedName]
	c.seen[req.NamespacedName] = now
	c.mu.Unlock()
	if !ok || last.uid != now.uid {
		return reconcile.Result{}, nil
	}
	c.finalized(o, last.finalizers, now.finalizers)
	for _, cond := range conds {
		was, ok := last.statuses[cond.Type]
		if !ok || was == cond.Status {
			continue
		}
		c.deps.Recorder.Event(o, corev1.EventTypeNormal, cond.Type, TransitionMessage(cond, was))
	}
	return reconcile.Result{}, nil
}

// TransitionMessage says that a condition went from one status to another, with its reason and message.
func TransitionMessage(cond Condition, was string) string {
	msg := fmt.Sprintf("Condition %s went from %s to %s (reason %s)", cond.Type, was, cond.Status, cond.Reason)
	if cond.Message != "" {
		msg += ": " + cond.Message
	}
	return msg
}

// finalized emits Finalized for each finalizer of before that after lacks.
func (c *Controller) finalized(o client.Object, before, after []string) {
	for _, f := range before {
		if !slices.Contains(after, f) {
			c.deps.Recorder.Event(o, corev1.EventTypeNormal, ReasonFinalized, "Finalizer "+f+" removed")
		}
	}
}
