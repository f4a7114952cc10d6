package provisioning

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/capacitybuffer"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver/adapter"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/threadcpu"
)

// Name is the controller's name in logs and metrics.
const Name = "provisioner"

// pendingRequeue re-examines a still-pending pod, since the kube-scheduler may not update it for minutes.
const pendingRequeue = 30 * time.Second

// workqueueAdder is the queue handler funcs receive; the trigger handlers never enqueue.
type workqueueAdder = workqueue.TypedRateLimitingInterface[reconcile.Request]

// Controller provisions capacity for pending pods.
type Controller struct {
	deps   deps.Deps
	solver solver.Solver
	// memo is the solver's scheduling memo (NewController), pruned after each pass's solves.
	memo    *scheduling.Memo
	batcher *Batcher
	// mu serializes passes (the loop, and tests calling Schedule).
	mu sync.Mutex
	// announced is what the last pass told each pending pod (by UID), so events are emitted on change only.
	announced map[types.UID]string
	// createdMu guards created, which the informer's event handlers update while a pass may run.
	createdMu sync.Mutex
	// created holds the NodeClaims this controller created that its cache has not shown yet, so a pass that
	// runs before the informer catches up counts them instead of launching the same capacity twice. An entry
	// goes as soon as the informer delivers any event for the NodeClaim: from then on the cache speaks for it,
	// including its deletion (a NodeClaim deleted seconds after launch, e.g. by a spot interruption, must not be
	// counted as capacity on its way).
	created map[string]createdClaim
	// unschedulableCodes are the reason codes the unschedulable-pods gauge has a series for.
	unschedulableCodes map[string]bool
	// plans is the latest plan and the nominations Dovetail set (shared with the NodeClaim lifecycle).
	plans *deps.Plans
	// surplusSince is when each in-flight NodeClaim was first found surplus, by name (see surplus).
	surplusSince map[string]time.Time
	// placement is where the last pass planned the pending pods, which the next keeps where it can (see pins).
	placement placement
	// followUpArmed is set while a pass is due surplusGrace after one that planned pods (see followUp).
	followUpArmed bool
	// noCompatible is when NoCompatibleInstanceTypes was last emitted per NodePool.
	noCompatible noCompatibleSeen
	// restored is set once the first pass with pending pods took its placement from the NodeClaims'
	// annotations (restorePlacement).
	restored bool
	// decisions times each pending pod's first scheduling decision.
	decisions *decisionTimes
}

// createdClaim is a NodeClaim as created, and when.
type createdClaim struct {
	nodeClaim *karpv1.NodeClaim
	at        time.Time
}

// createdClaimTTL bounds how long a created NodeClaim the cache never showed is counted (it may have been
// deleted before the informer saw it).
const createdClaimTTL = 2 * time.Minute

// NewController returns the provisioner with the scheduler of pkg/scheduling.
func NewController(d deps.Deps) *Controller {
	plans := d.Plans
	if plans == nil {
		plans = deps.NewPlans()
	}
	// The bound pods' requests are kept from one pass to the next (the scheduling memo, pruned after each pass):
	// a pass's pods are the informer cache's objects, the same while unchanged, and at 50,000 pods adding up their
	// requests again was a fifth of each solve.
	memo := scheduling.NewMemo()
	solve := adapter.New(d.Settings)
	solve.Options.Memo = memo
	return &Controller{
		deps:         d,
		memo:         memo,
		noCompatible: noCompatibleSeen{},
		solver:       solve,
		batcher:      NewBatcher(d.Clock, d.Settings.BatchIdleDuration, d.Settings.BatchMaxDuration),
		announced:    map[types.UID]string{},
		created:      map[string]createdClaim{},
		// unschedulableCodes starts empty: the gauge has no series until a pass finds an unschedulable pod.
		unschedulableCodes: map[string]bool{},
		plans:              plans,
		surplusSince:       map[string]time.Time{},
		decisions:          newDecisionTimes(),
	}
}

// Batcher returns the controller's batcher, so tests can drive it.
func (c *Controller) Batcher() *Batcher { return c.batcher }

// Register adds the pod trigger and the provisioning loop to the manager.
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	trigger := handler.Funcs{
		CreateFunc: func(context.Context, event.CreateEvent, workqueueAdder) { c.batcher.Trigger() },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueueAdder) {
			if e.ObjectNew.GetGeneration() != e.ObjectOld.GetGeneration() {
				c.batcher.Trigger()
			}
		},
		DeleteFunc: func(context.Context, event.DeleteEvent, workqueueAdder) { c.batcher.Trigger() },
	}
	err := builder.ControllerManagedBy(m).Named(Name+".trigger").
		For(&corev1.Pod{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return solver.IsProvisionable(o.(*corev1.Pod))
		}))).
		Watches(&karpv1.NodePool{}, trigger).
		Watches(&karpv1.NodeClaim{}, handler.Funcs{
			CreateFunc: func(_ context.Context, e event.CreateEvent, _ workqueueAdder) { c.CacheShows(e.Object.GetName()) },
			UpdateFunc: func(_ context.Context, e event.UpdateEvent, _ workqueueAdder) {
				c.CacheShows(e.ObjectNew.GetName())
				// A registered node can take the pods planned on its NodeClaim: nominate them before the
				// kube-scheduler places other pods there.
				if registered(e.ObjectOld) != registered(e.ObjectNew) {
					c.batcher.Trigger()
				}
			},
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueueAdder) {
				c.CacheShows(e.Object.GetName())
				c.batcher.Trigger()
			},
		}).
		Complete(deps.RetryTransient(reconcile.Func(c.reconcilePod)))
	if err != nil {
		return fmt.Errorf("building %s trigger: %w", Name, err)
	}
	if c.deps.Buffers != nil {
		// A CapacityBuffer resolved, resized or gone (and every buffer's periodic resolution) starts a pass, and
		// so does a pod bound to a node: it may have taken a buffer's room, which the pass launches again.
		c.deps.Buffers.OnChange(c.batcher.Trigger)
		inf, err := m.GetCache().GetInformer(context.Background(), &corev1.Pod{})
		if err != nil {
			return fmt.Errorf("getting the pod informer for capacity buffers: %w", err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, newObj interface{}) {
			o, ok1 := oldObj.(*corev1.Pod)
			n, ok2 := newObj.(*corev1.Pod)
			// Only while some buffer holds room: a scale-out's stream of bindings must not keep resetting the
			// batch window when there is no buffer to re-provision.
			if ok1 && ok2 && o.Spec.NodeName == "" && n.Spec.NodeName != "" && c.deps.Buffers.Any() {
				c.batcher.Trigger()
			}
		}}); err != nil {
			return fmt.Errorf("watching pod bindings for capacity buffers: %w", err)
		}
	}
	return m.Add(manager.RunnableFunc(func(ctx context.Context) error {
		ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName(Name))
		for c.batcher.Wait(ctx) {
			if err := c.Schedule(ctx); err != nil {
				deps.LogError(ctx, err, "provisioning failed")
			}
		}
		return nil
	}))
}

func (c *Controller) reconcilePod(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := c.deps.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !solver.IsProvisionable(pod) {
		return reconcile.Result{}, nil
	}
	c.decisions.ack(pod.UID, c.deps.Clock.Now())
	c.deps.Metrics.Pods.Times.Ack(client.ObjectKeyFromObject(pod), pod.UID, c.deps.Clock.Now())
	c.batcher.Trigger()
	return reconcile.Result{RequeueAfter: pendingRequeue}, nil
}

// Schedule runs one provisioning pass: snapshot, solve, apply.
func (c *Controller) Schedule(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx = metrics.WithController(ctx, Name)
	logger := log.FromContext(ctx)
	// Pods the trigger sees from now on may be missing from this pass's snapshot (see decisionTimes.decide).
	passStart := c.deps.Clock.Now()
	// The virtual pods of CapacityBuffers (none when the gate is off): placed after the real pods, on the room
	// those leave, so a buffer never delays a real pod.
	virtual := c.deps.Buffers.Pods()
	// A pass follows the one that planned pods on in-flight NodeClaims even when nothing is pending any more
	// (see followUp): the NodeClaims whose pods the kube-scheduler put elsewhere are surplus then.
	in, undecided, err := c.snapshot(ctx, len(c.surplusSince) > 0 || len(virtual) > 0 || len(c.placement.planned) > 0)
	if err != nil {
		return err
	}
	defer c.deps.Metrics.StartSchedulingPass(Name, len(in.Pods))()
	// Pods asking for dynamic resource allocation are left out with IGNORE_DRA_REQUESTS=true; apply tells them why.
	var held []*corev1.Pod
	if c.deps.DeviceModels == nil {
		in.Pods, held = withoutDRARequests(in.Pods)
	}
	c.recordEffectiveZones(in)
	c.deps.Metrics.SchedulerIgnoredPods.Set(float64(len(held)))
	if len(in.Pods) == 0 && len(virtual) == 0 && len(held) == 0 {
		c.placement = placement{}
		c.decisions.decide(nil, passStart, c.deps.Clock.Now())
		c.recordUnschedulable(solver.Plan{})
		c.plans.SetPlanned(nil)
		c.plans.ForgetNominatedExcept(nil)
		c.deps.Buffers.SetRoom(nil)
		c.releaseSurplus(ctx, logger, in, solver.Plan{}, undecided)
		return nil
	}
	if len(in.Pods) > 0 {
		c.announceNoCompatible(in.NodePools)
	}
	start := c.deps.Clock.Now()
	if !c.restored {
		// The first pass of this process: the pins of the process before it, from its NodeClaims.
		c.restored = true
		if len(c.placement.planned) == 0 {
			c.placement = restorePlacement(in)
		}
	}
	in.Pinned = pins(in, c.placement)
	plan := solver.Plan{Existing: map[string]string{}, Unschedulable: map[string]string{}}
	var buffers solver.Plan
	// The solve runs on this goroutine's thread alone: its CPU time is the pass's own, beside its wall time.
	cpu := threadcpu.Run(func() {
		if len(in.Pods) > 0 {
			plan = c.solver.Solve(ctx, in)
		}
		if len(virtual) > 0 {
			rest := afterPlan(in, plan)
			rest.Pods = virtual
			buffers = c.solver.Solve(ctx, rest)
		}
		c.memo.Prune()
	})
	c.deps.Metrics.SchedulingDuration.WithLabelValues(Name).Observe(c.deps.Clock.Since(start).Seconds())
	if cpu >= 0 {
		c.deps.Metrics.SchedulingCPU.Observe(cpu.Seconds())
	}
	for _, d := range c.decisions.decide(in.Pods, passStart, c.deps.Clock.Now()) {
		c.deps.Metrics.PodsSchedulingDecisionDuration.Observe(d.Seconds())
	}
	c.recordDecisions(in.Pods, held, plan)
	logger.V(1).Info("computed plan", "pods", len(in.Pods), "pinned", len(in.Pinned), "new-nodeclaims", len(plan.NewNodeClaims),
		"in-flight", len(plan.Existing), "unschedulable", len(plan.Unschedulable),
		"buffer-pods", len(virtual), "buffer-new-nodeclaims", len(buffers.NewNodeClaims), "buffer-unplaced", len(buffers.Unschedulable))
	if len(virtual) > 0 {
		c.deps.Buffers.SetRoom(bufferRoom(in, virtual, buffers))
		if err := c.updateBufferStatus(ctx, bufferPlacements(virtual, buffers)); err != nil {
			deps.LogError(ctx, err, "updating capacitybuffer status")
		}
		for key, reason := range buffers.Unschedulable {
			logger.V(1).Info("buffer pod cannot be provisioned for", "pod", key, "reason", reason)
		}
	} else {
		c.deps.Buffers.SetRoom(nil)
	}
	return c.apply(ctx, logger, in, plan, buffers, held, undecided)
}

// recordDecisions records, for the provisioning pod metrics, the pass's decision on each pending pod: a place for
// the pods the plan does not call unschedulable, none for the others and for the pods left out (held).
func (c *Controller) recordDecisions(pods, held []*corev1.Pod, plan solver.Plan) {
	now := c.deps.Clock.Now()
	times := c.deps.Metrics.Pods.Times
	for _, p := range pods {
		_, unschedulable := plan.Unschedulable[solver.PodKey(p)]
		times.Decide(client.ObjectKeyFromObject(p), p.UID, now, !unschedulable)
	}
	for _, p := range held {
		times.Decide(client.ObjectKeyFromObject(p), p.UID, now, false)
	}
}

// apply creates the NodeClaims of both plans and tells the real pods where they go. buffers is the plan of the
// CapacityBuffers' virtual pods: its NodeClaims are created too, and its placements keep in-flight NodeClaims
// from counting as surplus, but virtual pods get no events or nominations (they are no API objects). held are
// the pending pods left out of the pass for their dynamic resource allocation claims.
func (c *Controller) apply(ctx context.Context, logger logr.Logger, in solver.Input, plan, buffers solver.Plan, held []*corev1.Pod, undecided int) error {
	if len(buffers.NewNodeClaims) > 0 || len(buffers.Existing) > 0 {
		merged := plan
		merged.NewNodeClaims = append(append([]solver.NewNodeClaim(nil), plan.NewNodeClaims...), buffers.NewNodeClaims...)
		merged.Existing = map[string]string{}
		for k, v := range plan.Existing {
			merged.Existing[k] = v
		}
		for k, v := range buffers.Existing {
			merged.Existing[k] = v
		}
		plan = merged
	}
	pods := map[string]*corev1.Pod{}
	for _, p := range in.Pods {
		pods[solver.PodKey(p)] = p
	}
	announced := map[types.UID]string{}
	var errs []error
	// planned collects the pods of each NodeClaim created now; plan.Existing has those of the others.
	planned := map[string][]deps.PodRef{}
	var created []string
	// NodeClaims are created concurrently: one after the other, a pass's NodeClaims reached the launch step
	// seconds apart under load, too far apart to share a CreateFleet call.
	built := make([]*karpv1.NodeClaim, len(plan.NewNodeClaims))
	createErrs := make([]error, len(plan.NewNodeClaims))
	workqueue.ParallelizeUntil(ctx, createWorkers, len(plan.NewNodeClaims), func(i int) {
		built[i] = solver.BuildNodeClaim(plan.NewNodeClaims[i])
		annotatePlanned(built[i], plan.NewNodeClaims[i].Pods)
		createErrs[i] = c.deps.Client.Create(ctx, built[i])
		if createErrs[i] == nil {
			// Its launch is on its way: the cloud provider's launch window waits for it (bounded), so the
			// NodeClaims of a pass share CreateFleet calls however far apart their launches start.
			c.deps.LaunchNotices.Expect(built[i].Name)
		}
	})
	for i, nn := range plan.NewNodeClaims {
		nc := built[i]
		if err := createErrs[i]; err != nil {
			errs = append(errs, fmt.Errorf("creating nodeclaim for nodepool %s: %w", nn.NodePool.Name, err))
			continue
		}
		c.createdMu.Lock()
		c.created[nc.Name] = createdClaim{nodeClaim: nc.DeepCopy(), at: c.deps.Clock.Now()}
		c.createdMu.Unlock()
		created = append(created, nc.Name)
		c.deps.Metrics.CountNodeClaimCreated(metrics.ReasonProvisioned, nn.NodePool.Name, nc)
		real, virtual := splitVirtual(nn.Pods)
		logger.Info("created nodeclaim", "nodeclaim", nc.Name, "nodepool", nn.NodePool.Name, "pods", len(real),
			"buffer-pods", len(virtual), "instance-types", len(nn.InstanceTypes), "requests", resourceString(nc.Spec.Resources.Requests))
		for _, p := range real {
			c.announce(announced, p, corev1.EventTypeNormal, "Nominated", "nodeclaim/"+nc.Name, "Pod should schedule on: nodeclaim/"+nc.Name)
			planned[nc.Name] = append(planned[nc.Name], deps.PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID})
		}
	}
	// A pod planned on a NodeClaim whose Node has registered since is still planned on the same NodeClaim: it is
	// announced once, not again with the Node's name (an event is a write, and a 1,000-node scale-out made
	// one more a pod).
	nodes := map[string]string{}
	for _, n := range in.Nodes {
		nodes[n.Node.Name] = ""
		if n.NodeClaim != nil {
			nodes[n.Node.Name] = n.NodeClaim.Name
		}
	}
	for key, name := range plan.Existing {
		if p := pods[key]; p != nil {
			target, message := "nodeclaim/"+name, "Pod should schedule on: nodeclaim/"+name
			if claim, ok := nodes[name]; ok {
				target, message = "node/"+name, "Pod should schedule on: node/"+name
				if claim != "" {
					target, message = "nodeclaim/"+claim, "Pod should schedule on: nodeclaim/"+claim+", node/"+name
				}
			}
			c.announce(announced, p, corev1.EventTypeNormal, "Nominated", target, message)
		}
	}
	c.recordUnschedulable(plan)
	for key, reason := range plan.Unschedulable {
		if p := pods[key]; p != nil {
			c.announce(announced, p, corev1.EventTypeWarning, "FailedScheduling", reason, "Failed to find capacity: "+reason)
			logger.V(1).Info("pod cannot be provisioned for", "pod", key, "reason", reason)
		}
	}
	for _, p := range held {
		c.announce(announced, p, corev1.EventTypeWarning, "FailedScheduling", ReasonDRARequests, "Failed to find capacity: "+ReasonDRARequests)
		logger.V(1).Info("pod cannot be provisioned for", "pod", p.Namespace+"/"+p.Name, "reason", ReasonDRARequests)
	}
	c.announced = announced
	errs = append(errs, c.nominate(ctx, in, plan, planned))
	c.placement = recordPlacement(in, planned, created)
	// plan.Existing holds the virtual pods' placements too: nominate only looks up the real pods of in.Pods.
	c.releaseSurplus(ctx, logger, in, plan, undecided)
	c.followUp(ctx)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("applying plan: %w", err)
	}
	return nil
}

// boundMeanwhile reports whether err is the API server refusing a nomination because the pod is bound to a node
// already (status.nominatedNodeName is forbidden on bound pods).
func boundMeanwhile(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == "status.nominatedNodeName" && cause.Type == metav1.CauseType(field.ErrorTypeForbidden) {
			return true
		}
	}
	return false
}

// splitVirtual separates real pods from the virtual pods of CapacityBuffers.
func splitVirtual(pods []*corev1.Pod) (real, virtual []*corev1.Pod) {
	for _, p := range pods {
		if capacitybuffer.IsVirtual(p) {
			virtual = append(virtual, p)
		} else {
			real = append(real, p)
		}
	}
	return real, virtual
}

// registered reports whether a NodeClaim's node has joined (status.nodeName is set).
func registered(o client.Object) bool {
	nc, ok := o.(*karpv1.NodeClaim)
	return ok && nc.Status.NodeName != ""
}

// createWorkers bounds the NodeClaims a pass creates at once.
const createWorkers = 16

// nominationWorkers bounds the pod status writes a pass makes at once.
const nominationWorkers = 16

// nominate makes the pending pods' status.nominatedNodeName follow the plan, so that the kube-scheduler tries
// the planned node first and keeps its room for them (KEP-5278), and shares the plan (planned holds the pods of
// the NodeClaims created by this pass) with the NodeClaim lifecycle.
func (c *Controller) nominate(ctx context.Context, in solver.Input, plan solver.Plan, planned map[string][]deps.PodRef) error {
	pending := map[types.UID]bool{}
	for _, p := range in.Pods {
		pending[p.UID] = true
		if name, ok := plan.Existing[solver.PodKey(p)]; ok {
			planned[name] = append(planned[name], deps.PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID})
		}
	}
	c.plans.SetPlanned(planned)
	c.plans.ForgetNominatedExcept(pending)
	budget := deps.NominationBudget(len(in.Nodes))
	c.plans.SetNominationBudget(budget)
	changes := nominations(in, plan, c.plans.Nominated(), budget)
	errs := make([]error, len(changes))
	done := make([]bool, len(changes))
	workqueue.ParallelizeUntil(ctx, nominationWorkers, len(changes), func(i int) {
		p := changes[i].pod
		patch := client.MergeFrom(p.DeepCopy())
		p.Status.NominatedNodeName = changes[i].node
		if err := c.deps.Client.Status().Patch(ctx, p, patch); client.IgnoreNotFound(err) != nil {
			if boundMeanwhile(err) {
				// The kube-scheduler bound the pod after this pass's snapshot: it needs no nomination any more.
				return
			}
			errs[i] = fmt.Errorf("nominating pod %s/%s for node %q: %w", p.Namespace, p.Name, changes[i].node, err)
			return
		}
		done[i] = true
	})
	update := map[types.UID]string{}
	for i, ch := range changes {
		if done[i] {
			update[ch.pod.UID] = ch.node
		}
	}
	c.plans.UpdateNominated(update)
	if len(changes) > 0 {
		log.FromContext(ctx).V(1).Info("updated pod nominations", "pods", len(changes), "written", len(update))
	}
	return errors.Join(errs...)
}

// followUp makes sure a pass runs surplusGrace from now while pods are planned on in-flight NodeClaims: a pod
// bound to a node starts no pass, so when the last pending pods of a scale-out are bound elsewhere than planned,
// nothing else would look at the NodeClaims left without pods (TestNodeClaimLeftEmptyAfterTheLastBinding).
func (c *Controller) followUp(ctx context.Context) {
	if len(c.placement.planned) == 0 || c.followUpArmed {
		return
	}
	c.followUpArmed = true
	go func() {
		select {
		case <-ctx.Done():
		case <-c.deps.Clock.After(surplusGrace):
			c.mu.Lock()
			c.followUpArmed = false
			c.mu.Unlock()
			c.batcher.Trigger()
		}
	}()
}

// releaseSurplus deletes the in-flight NodeClaims that have been surplus (see surplus) for surplusGrace, and
// makes sure a pass runs again while some wait for their grace to end. undecided is the number of pods the
// kube-scheduler has yet to decide about (see solver.AwaitingScheduler).
func (c *Controller) releaseSurplus(ctx context.Context, logger logr.Logger, in solver.Input, plan solver.Plan, undecided int) {
	now := c.deps.Clock.Now()
	// While pods wait for room this pass can give them, an in-flight NodeClaim the plan does not use now may be the
	// one the kube-scheduler binds them to next (with one pod a node, deleting such NodeClaims relaunched a fifth of
	// a 200-node scale-out): surplus NodeClaims are kept, and deleted only once nothing placeable is pending. So are
	// they, for up to undecidedHold, while the kube-scheduler has pods it has not decided about yet: in a 2,000-pod
	// scale-out its queue empties only now and then, and between two of its verdicts no pod counts as pending here.
	// Bounded, because on a busy cluster new pods arrive all the time and the empty node would never go.
	hold := len(in.Pods) > len(plan.Unschedulable)
	since := map[string]time.Time{}
	var due []*karpv1.NodeClaim
	found := surplus(in, plan)
	names := make([]string, 0, len(found))
	for _, nc := range found {
		names = append(names, nc.Name)
	}
	// Published before any is deleted: the disruption decision must not plan to move pods onto them (a drift
	// command planned its pods onto empty NodeClaims deleted a second later, and its pods had no room).
	c.plans.SetSurplus(names)
	for _, nc := range found {
		first, seen := c.surplusSince[nc.Name]
		if !seen {
			since[nc.Name] = now
			continue
		}
		if hold || now.Sub(first) < surplusGrace || (undecided > 0 && now.Sub(first) < surplusGrace+undecidedHold) {
			since[nc.Name] = first
			continue
		}
		due = append(due, nc)
	}
	// Deleted concurrently, as they are created: at the end of a 2,000-pod scale-out one after the other took
	// minutes for 228 NodeClaims on a busy API server.
	failed := make([]bool, len(due))
	workqueue.ParallelizeUntil(ctx, createWorkers, len(due), func(i int) {
		nc := due[i]
		if err := c.deps.Client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			logger.Error(err, "deleting surplus nodeclaim", "nodeclaim", nc.Name)
			failed[i] = true
			return
		}
		first := c.surplusSince[nc.Name]
		logger.Info("deleted nodeclaim the plan no longer needs: its pods went elsewhere", "nodeclaim", nc.Name,
			"nodepool", nc.NodePoolName(), "node", nc.Status.NodeName, "surplus-for", now.Sub(first).Round(time.Second).String())
		c.deps.Recorder.Event(nc, corev1.EventTypeNormal, "Unneeded", "NodeClaim deleted: the pods it was launched for went to other nodes and no pending pod needs it")
	})
	for i, nc := range due {
		if failed[i] {
			since[nc.Name] = c.surplusSince[nc.Name]
		}
	}
	c.surplusSince = since
	if len(since) > 0 {
		go func() {
			select {
			case <-ctx.Done():
			case <-c.deps.Clock.After(surplusGrace):
				c.batcher.Trigger()
			}
		}()
	}
}

// recordUnschedulable sets the unschedulable-pods gauge from this pass: one series per reason code seen now or
// before (a code no pod has any more drops to 0 rather than keeping its last value).
func (c *Controller) recordUnschedulable(plan solver.Plan) {
	counts := map[string]int{}
	for key := range plan.Unschedulable {
		code := plan.UnschedulableCodes[key]
		if code == "" {
			code = "Other"
		}
		counts[code]++
	}
	for code := range c.unschedulableCodes {
		if _, ok := counts[code]; !ok {
			counts[code] = 0
		}
	}
	for code, n := range counts {
		c.deps.Metrics.PodsUnschedulable.WithLabelValues(code).Set(float64(n))
		c.unschedulableCodes[code] = true
	}
	c.deps.Metrics.SchedulerUnschedulablePods.WithLabelValues(Name).Set(float64(len(plan.Unschedulable)))
}

// withCreated adds to a listing of the cache the NodeClaims this controller created that it does not show yet,
// and forgets those it shows (or that are too old to still be on their way).
func (c *Controller) withCreated(listed []karpv1.NodeClaim) []karpv1.NodeClaim {
	c.createdMu.Lock()
	defer c.createdMu.Unlock()
	seen := map[string]bool{}
	for i := range listed {
		seen[listed[i].Name] = true
	}
	now := c.deps.Clock.Now()
	names := make([]string, 0, len(c.created))
	for name, cc := range c.created {
		if seen[name] || now.Sub(cc.at) > createdClaimTTL {
			delete(c.created, name)
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		listed = append(listed, *c.created[name].nodeClaim.DeepCopy())
	}
	return listed
}

// CacheShows forgets a NodeClaim this controller created once the informer has delivered an event for it: the
// cache now shows it, or its deletion. The NodeClaim watch calls it; tests may too.
func (c *Controller) CacheShows(name string) {
	c.createdMu.Lock()
	defer c.createdMu.Unlock()
	delete(c.created, name)
}

// announce emits an event on the pod unless the previous pass emitted one of the same reason and subject (what
// the event is about: the NodeClaim planned, the capacity missing); next collects this pass's.
func (c *Controller) announce(next map[types.UID]string, p *corev1.Pod, eventType, reason, subject, message string) {
	key := reason + ": " + subject
	next[p.UID] = key
	if c.announced[p.UID] == key {
		return
	}
	c.deps.Recorder.Event(p, eventType, reason, message)
}

func resourceString(l corev1.ResourceList) string {
	cpu, mem := l[corev1.ResourceCPU], l[corev1.ResourceMemory]
	pods := l[corev1.ResourcePods]
	return fmt.Sprintf("cpu=%s memory=%s pods=%s", cpu.String(), mem.String(), pods.String())
}
