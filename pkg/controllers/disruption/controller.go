package disruption

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver/adapter"
	core "github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/settings"
)

// Name is the controller's name in logs and metrics.
const Name = "disruption"

const (
	// PollPeriod is how often a pass runs.
	PollPeriod = 10 * time.Second
	// ReplacementTimeout is how long a command waits for its replacements to initialize before it is abandoned.
	ReplacementTimeout = 10 * time.Minute
	// missingReplacementGrace is how long a command may show fewer replacements than it launched (the cache
	// catching up) before the missing ones are taken as lost.
	missingReplacementGrace = 30 * time.Second
)

// Event reasons.
const (
	ReasonDisruptionBlocked          = "DisruptionBlocked"
	ReasonDisruptionLaunching        = "DisruptionLaunching"
	ReasonDisruptionWaitingReadiness = "DisruptionWaitingReadiness"
	ReasonDisruptionTerminating      = "DisruptionTerminating"
	ReasonDisruptionAborted          = "DisruptionAborted"
)

// Controller carries out voluntary disruption.
type Controller struct {
	deps deps.Deps
	// mu serializes passes (the loop, and tests calling Reconcile).
	mu sync.Mutex
	// blocked is the last DisruptionBlocked message announced per NodeClaim, so events are emitted on change.
	blocked map[string]string
	// waiting is why consolidation waited as last logged, and waitingLogged when; see logWaiting.
	waiting       string
	waitingLogged time.Time
}

// NewController returns the controller.
func NewController(d deps.Deps) *Controller {
	return &Controller{deps: d, blocked: map[string]string{}}
}

// Register adds the polling loop to the manager (it runs on the leader only).
func (c *Controller) Register(_ context.Context, m manager.Manager) error {
	return m.Add(manager.RunnableFunc(func(ctx context.Context) error {
		ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName(Name))
		for {
			if err := c.Reconcile(ctx); err != nil && ctx.Err() == nil {
				log.FromContext(ctx).Error(err, "disruption pass failed")
			}
			select {
			case <-ctx.Done():
				return nil
			case <-c.deps.Clock.After(PollPeriod):
			}
		}
	}))
}

// state is one pass's view of the cluster, from the cache, with the commands in progress.
type state struct {
	*View
	inProgress []*InProgress
}

// Reconcile runs one pass: resume a command in progress, or decide and start a new one.
func (c *Controller) Reconcile(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx = metrics.WithController(ctx, Name)
	st, err := c.observe(ctx)
	if err != nil {
		return err
	}
	if len(st.inProgress) > 0 {
		for _, cmd := range st.inProgress {
			if err := c.resume(ctx, st, cmd); err != nil {
				return err
			}
		}
		return nil
	}
	if err := c.untaintOrphans(ctx, st); err != nil {
		return err
	}
	snap, err := BuildSnapshot(ctx, c.deps, st.View)
	if err != nil {
		return err
	}
	if len(snap.Candidates) == 0 {
		c.record(&core.Result{}, snap, 0)
		return nil
	}
	start := c.deps.Clock.Now()
	res, err := core.Decide(ctx, snap, DecisionOptions(c.deps.Settings))
	if err != nil {
		return fmt.Errorf("deciding: %w", err)
	}
	c.record(res, snap, c.deps.Clock.Since(start))
	c.logWaiting(ctx, res.Waiting)
	c.announceStays(st, res.Stays)
	if res.Command == nil {
		return nil
	}
	return c.start(ctx, st, res.Command)
}

// DecisionOptions are the decision's options from the controller's settings.
func DecisionOptions(s *settings.Settings) core.Options {
	return core.Options{
		SpotToSpotConsolidation: s.FeatureEnabled(settings.FeatureSpotToSpotConsolidation),
		Scheduling:              adapter.New(s).Options,
	}
}

// observe lists what a pass needs, drops the records it cannot read and groups the commands in progress.
func (c *Controller) observe(ctx context.Context) (*state, error) {
	v, err := Observe(ctx, c.deps.Client, c.deps.Clock.Now())
	if err != nil {
		return nil, err
	}
	st := &state{View: v}
	logger := log.FromContext(ctx)
	for i := range st.Claims {
		nc := &st.Claims[i]
		raw, ok := nc.Annotations[CommandAnnotationKey]
		if !ok || !nc.DeletionTimestamp.IsZero() {
			continue
		}
		if _, err := decodeRecord(raw); err != nil {
			// A record we cannot read is dropped (the node is untainted as an orphan) rather than blocking
			// disruption forever.
			logger.Error(err, "dropping unreadable disruption record", "nodeclaim", nc.Name)
			if err := c.clearCandidate(ctx, st, nc); err != nil {
				return nil, err
			}
		}
	}
	st.inProgress = CommandsInProgress(v)
	return st, nil
}

// record updates the disruption metrics after a decision.
func (c *Controller) record(res *core.Result, snap *core.Snapshot, took time.Duration) {
	m := c.deps.Metrics
	method, kind := "none", ""
	if res.Command != nil {
		method, kind = strings.ToLower(string(res.Command.Reason)), res.Command.ConsolidationType
	}
	m.DisruptionEvaluationDuration.WithLabelValues(method, kind).Observe(took.Seconds())
	for _, r := range core.Reasons() {
		m.DisruptionEligibleNodes.WithLabelValues(strings.ToLower(string(r))).Set(float64(res.Eligible[r]))
	}
	for pool, allowed := range res.Allowed {
		for r, n := range allowed {
			// An unlimited allowance is reported as the NodePool's node count: all of them may go.
			m.NodePoolAllowedDisruptions.WithLabelValues(pool, strings.ToLower(string(r))).Set(float64(min(n, snap.NodeCounts[pool])))
		}
	}
	for _, t := range res.TimedOut {
		m.ConsolidationTimeouts.WithLabelValues(t).Inc()
	}
	m.DisruptionSavings.Set(res.SavingsPerHour)
	perDollar := 0.0
	if res.SavingsPerHour > 0 {
		perDollar = float64(res.Evictions) / res.SavingsPerHour
	}
	m.DisruptionEvictionsPerDollar.Set(perDollar)
	// Balanced scores (approved or rejected), then the approved consolidation moves of other policies.
	for _, sc := range res.Scored {
		decision := "rejected"
		if sc.Approved {
			decision = "approved"
		}
		m.ConsolidationScore.WithLabelValues(decision, sc.NodePool, string(core.PolicyBalanced)).Observe(sc.Value)
		m.ConsolidationMoves.WithLabelValues(decision, sc.NodePool, string(core.PolicyBalanced)).Inc()
	}
	for _, cmd := range res.Commands {
		if cmd.Reason != karpv1.DisruptionReasonUnderutilized {
			continue
		}
		counted := map[string]bool{}
		for _, cand := range cmd.Candidates {
			np := snap.NodePools[cand.NodePool]
			if np == nil || np.Spec.Disruption.ConsolidationPolicy == core.PolicyBalanced || counted[cand.NodePool] {
				continue
			}
			counted[cand.NodePool] = true
			m.ConsolidationMoves.WithLabelValues("approved", cand.NodePool, string(np.Spec.Disruption.ConsolidationPolicy)).Inc()
		}
	}
}

// announceStays emits a DisruptionBlocked event on a node (and its NodeClaim) when something the user controls
// keeps it (do-not-disrupt, a PodDisruptionBudget, a disruption budget), once per change of message.
func (c *Controller) announceStays(st *state, stays []core.Stay) {
	seen := map[string]bool{}
	claims := map[string]*karpv1.NodeClaim{}
	for i := range st.Claims {
		claims[st.Claims[i].Name] = &st.Claims[i]
	}
	for _, s := range stays {
		switch s.Reason {
		case core.StayDoNotDisrupt, core.StayPDB, core.StayBudget:
		default:
			continue
		}
		seen[s.NodeClaim] = true
		if c.blocked[s.NodeClaim] == s.Message {
			continue
		}
		c.blocked[s.NodeClaim] = s.Message
		msg := "Cannot disrupt: " + s.Message
		if n := st.Nodes[s.Node]; n != nil {
			c.deps.Recorder.Event(n, corev1.EventTypeNormal, ReasonDisruptionBlocked, msg)
		}
		if nc := claims[s.NodeClaim]; nc != nil {
			c.deps.Recorder.Event(nc, corev1.EventTypeNormal, ReasonDisruptionBlocked, msg)
		}
	}
	for name := range c.blocked {
		if !seen[name] {
			delete(c.blocked, name)
		}
	}
}

// waitingLogEvery is how often a changed reason to wait is logged while consolidation keeps waiting: the reason
// names counts and NodeClaims, so during a large launch it changes nearly every pass.
const waitingLogEvery = time.Minute

// logWaiting logs when consolidation starts and stops waiting, and a changed reason at most once a waitingLogEvery.
func (c *Controller) logWaiting(ctx context.Context, why string) {
	now := c.deps.Clock.Now()
	switch {
	case why == c.waiting:
		return
	case why == "":
		log.FromContext(ctx).Info("consolidation no longer waits")
	case c.waiting != "" && now.Sub(c.waitingLogged) < waitingLogEvery:
		return // still waiting, for a reason worded differently: keep the last one logged
	default:
		log.FromContext(ctx).Info("consolidation waits", "why", why)
	}
	c.waiting, c.waitingLogged = why, now
}
