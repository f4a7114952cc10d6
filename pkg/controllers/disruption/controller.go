package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/internal/disruptionview"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver/adapter"
	core "github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/settings"
	"github.com/dovetail/dovetail/pkg/threadcpu"
)

// Name is the controller's name in logs and metrics.
const Name = "disruption"

const (
	// PollPeriod is how often a pass runs when no command is in progress.
	PollPeriod = 10 * time.Second
	// BusyPollPeriod is how often a pass runs while commands are in progress: a command that completes frees
	// budget for the next one. Such a pass decides again only when a command ended or started since the last
	// decision, or PollPeriod has passed.
	BusyPollPeriod = 2 * time.Second
	// ValidationTimeout is how long a command whose replacements are ready may wait for its pods to fit on the
	// nodes there are (the check before draining) before it is abandoned. Room taken by a pod the kube-scheduler
	// put on a replacement rarely comes back, so the wait is short: the next decision plans again.
	ValidationTimeout = time.Minute
	// ContentionWait is how long a command whose pods fit may wait for other moving pods to land before it drains
	// anyway (drainChecker.check): long enough for the termination controller to evict the pods of the nodes
	// draining and the kube-scheduler to place them (with 30 s, a full-size drift drained 2 to 8 commands anyway,
	// and one of them left a 28Gi pod Pending), short enough that a pending pod it never places (gated, or
	// waiting for a volume) does not hold the command long.
	ContentionWait = time.Minute
	// ContentionFirst is how long a command may wait for other moving pods to land before it comes first: from
	// then on a pass checks it before the commands that have not waited as long (largestFirst), and the commands
	// checked after it must not leave its pods without room (drainChecker.await). Otherwise the commands of large
	// pods, checked first in every pass, kept a command of small pods waiting until ContentionWait, and when it
	// then drained anyway its pods took the room of the large pods moving at the same time (5 pods of 28Gi
	// marked unschedulable in the 600-node drift benchmark).
	ContentionFirst = 20 * time.Second
	// recentStart is how long the controller remembers the commands it started, for a cache that does not show
	// their records yet.
	recentStart = time.Minute
	// ReplacementTimeout is how long a command waits for its replacements to initialize before it is abandoned.
	ReplacementTimeout = 10 * time.Minute
	// missingReplacementGrace is how long a command may show fewer replacements than it launched (the cache
	// catching up) before the missing ones are taken as lost.
	missingReplacementGrace = 30 * time.Second
	// StartWindow bounds how long a pass starts new commands: the commands of a decision not started by then are
	// left (nothing of them written) for the next decision, so that the commands in progress move on meanwhile.
	// A drift of 658 nodes with a 100% budget decided ~400 replace commands at once, and their writes held the
	// pass (and every initialized replacement's drain) for minutes.
	StartWindow = 15 * time.Second
)

// Event reasons.
const (
	ReasonDisruptionBlocked          = karpv1.EventReasonDisruptionBlocked
	ReasonDisruptionLaunching        = karpv1.EventReasonDisruptionLaunching
	ReasonDisruptionWaitingReadiness = karpv1.EventReasonDisruptionWaitingReadiness
	ReasonDisruptionTerminating      = karpv1.EventReasonDisruptionTerminating
	// ReasonDisruptionAborted is Dovetail's own: a started command abandoned (its candidates stay in service).
	ReasonDisruptionAborted = "DisruptionAborted"
)

// Controller carries out voluntary disruption.
type Controller struct {
	deps deps.Deps
	// mu serializes passes (the loop, and tests calling Reconcile).
	mu sync.Mutex
	// blocked is the last DisruptionBlocked message announced per NodeClaim, so events are emitted on change.
	blocked map[string]string
	// podNotices is the last do-not-disrupt event per candidate pod (donotdisrupt.go).
	podNotices map[string]string
	// unconsolidatable is the last Unconsolidatable event announced per NodeClaim (see announceStays).
	unconsolidatable map[string]announced
	// blockedPools is when DisruptionBlocked was last emitted per NodePool and reason (announceBlockedPools).
	blockedPools map[string]time.Time
	// waiting is why consolidation waited as last logged, and waitingLogged when; see logWaiting.
	waiting       string
	waitingLogged time.Time
	// validating is, per command ID, when the check before draining first failed; waveWait when the command
	// started waiting for an earlier wave of its candidates to drain.
	validating map[string]time.Time
	waveWait   map[string]time.Time
	// contended is, per command ID, when it first waited for other moving pods to land (ContentionWait).
	contended map[string]time.Time
	// recent are the records this controller wrote on candidates, by NodeClaim, until the cache shows them.
	recent map[string]recentRecord
	// deleted are the candidates this controller deleted, by NodeClaim, until the cache shows them deleting.
	deleted map[string]time.Time
	// recentMu guards recent and deleted, which a command's candidates are written in from several goroutines
	// at once.
	recentMu sync.Mutex
	// decided is when the last decision ran, and decidedWith the commands in progress right after it;
	// decideEnded when its pass ended and decideTook how long the decision took (deciding and preparing its
	// commands, not writing them).
	decided     time.Time
	decidedWith string
	decideEnded time.Time
	decideTook  time.Duration
	// examined is the last decision's Result.Examined, fed to the next one (candidates not examined go first).
	examined map[string]time.Time
	// inFlight says the last pass ended with commands in progress (the loop then polls faster).
	inFlight bool
	// repairNotices is the last node repair notice (held back, do-not-repair) per NodeClaim (markRepairs).
	repairNotices map[string]announced
	// reboots is when node repair asked for each recent reboot, by NodeClaim UID (commitReboot).
	reboots map[types.UID][]time.Time
	// rest is what the last decision with nothing in flight found nothing to do on (rest.go); repairDue is the
	// first repair toleration or hold-back recheck markRepairs saw this pass, zero if none.
	rest      restMemo
	repairDue time.Time
	// changes counts the changes to the objects a decision at rest reads (watchedKinds).
	changes deps.ChangeCount
	// memo is the scheduling memo of the passes' solves (drain checks and decisions), pruned after each pass that
	// built a snapshot: the pods are the informer cache's objects, the same while unchanged, and their requests are
	// not added up again at each check and decision (at 5,000 nodes a check solving over 50,000 bound pods spent
	// most of its time on that).
	memo *scheduling.Memo
}

// recentRecord is a record written by this controller.
type recentRecord struct {
	raw     string
	written time.Time
}

// NewController returns the controller.
func NewController(d deps.Deps) *Controller {
	return &Controller{deps: d, memo: scheduling.NewMemo(), blocked: map[string]string{}, podNotices: map[string]string{}, unconsolidatable: map[string]announced{}, blockedPools: map[string]time.Time{}, validating: map[string]time.Time{}, waveWait: map[string]time.Time{}, contended: map[string]time.Time{}, deleted: map[string]time.Time{}, recent: map[string]recentRecord{}, repairNotices: map[string]announced{}, reboots: map[types.UID][]time.Time{}}
}

// Register adds the polling loop to the manager (it runs on the leader only).
func (c *Controller) Register(ctx context.Context, m manager.Manager) error {
	if RepairInLoop(c.deps.Settings) {
		// A NODE_REPAIR_TOLERATIONS naming a condition no policy watches stops the start.
		if _, err := c.repairPolicies(); err != nil {
			return err
		}
	}
	if err := c.changes.Watch(ctx, m.GetCache(), watchedKinds()...); err != nil {
		return err
	}
	return m.Add(manager.RunnableFunc(func(ctx context.Context) error {
		ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName(Name))
		for {
			if err := c.Reconcile(ctx); err != nil && ctx.Err() == nil {
				if apierrors.IsConflict(err) {
					// Another writer changed an object after every retry: the next pass resumes from the objects.
					log.FromContext(ctx).Info("disruption pass deferred a step to the next pass", "error", err.Error())
				} else {
					log.FromContext(ctx).Error(err, "disruption pass failed")
				}
			}
			select {
			case <-ctx.Done():
				return nil
			case <-c.deps.Clock.After(c.period()):
			}
		}
	}))
}

// state is one pass's view of the cluster, from the cache, with the commands in progress.
type state struct {
	*View
	inProgress []*InProgress
	// waves are the deletions the pass's resumes cleared, made together after them (terminateQueued).
	waves []queuedWave
	// byName indexes the pass's NodeClaims by name (claim), built at first use.
	byName map[string]*karpv1.NodeClaim
	// named are the names the pass gave to new replacements (replacementName).
	named map[string]bool
}

// claim returns the pass's NodeClaim of that name, or nil.
func (st *state) claim(name string) *karpv1.NodeClaim {
	if st.byName == nil {
		st.byName = make(map[string]*karpv1.NodeClaim, len(st.Claims))
		for i := range st.Claims {
			st.byName[st.Claims[i].Name] = &st.Claims[i]
		}
	}
	return st.byName[name]
}

// period is how long the loop waits before the next pass.
func (c *Controller) period() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inFlight {
		return BusyPollPeriod
	}
	return PollPeriod
}

// Reconcile runs one pass: move every command in progress on, then decide and start new commands as budgets
// allow. A command that fails is logged and left to the next pass; the others go on.
func (c *Controller) Reconcile(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx = metrics.WithController(ctx, Name)
	logger := log.FromContext(ctx)
	// At rest with no change counted since a decision that found nothing to do, before anything time-bound
	// changed: the pass would find the same, and lists nothing.
	changes, watching := c.changes.Seen()
	buffers := c.deps.Buffers.Version()
	if now := c.deps.Clock.Now(); watching && c.rest.key != 0 && changes == c.rest.changes &&
		buffers == c.rest.buffers && now.Before(c.rest.until) {
		c.decided, c.decidedWith, c.inFlight = now, "", false
		return nil
	}
	st, err := c.observe(ctx)
	if err != nil {
		return err
	}
	// At rest on the same objects as a decision that found nothing to do, before anything time-bound changed:
	// the pass would find the same, and not even its snapshot (most of an idle pass's CPU at 1,000 nodes) is
	// built.
	var key uint64
	if len(st.inProgress) == 0 && fingerprint(st) == "" {
		key = restKey(st.View, buffers)
		if key == c.rest.key && st.Now.Before(c.rest.until) {
			c.rest.changes = changes
			c.decided, c.decidedWith, c.inFlight = st.Now, "", false
			return nil
		}
	}
	prev := c.rest
	c.rest = restMemo{}
	snap, err := BuildSnapshot(ctx, c.deps, st.View)
	if err != nil {
		return err
	}
	if err := c.markRepairs(ctx, st, snap); err != nil {
		return err
	}
	// The pass's solves (the checks of its commands, its decision) share the controller's memo, pruned at the
	// pass's end to the pods they looked up.
	defer c.memo.Prune()
	chkOpts := DecisionOptions(c.deps.Settings).Scheduling
	chkOpts.Memo = c.memo
	chk := newDrainChecker(st, snap, chkOpts)
	var errs []error
	before := fingerprint(st)
	for _, cmd := range largestFirst(st.inProgress, chk.bound, c.waitedLong(st.Now)) {
		if err := c.resume(ctx, st, chk, cmd); err != nil {
			c.commandFailed(ctx, cmd.Record.ID, err, &errs)
		}
	}
	c.terminateQueued(ctx, st, &errs)
	for _, m := range []map[string]time.Time{c.validating, c.waveWait, c.contended} {
		for id := range m {
			if !slices.ContainsFunc(st.inProgress, func(cmd *InProgress) bool { return cmd.Record.ID == id }) {
				delete(m, id)
			}
		}
	}
	if err := c.untaintOrphans(ctx, st); err != nil {
		errs = append(errs, err)
	}
	if err := c.liftHolds(ctx, st); err != nil {
		errs = append(errs, err)
	}
	// A decision is due when nothing is in flight (the loop then runs every PollPeriod), when a command or a
	// deletion ended or started since the last one, or PollPeriod after it.
	current := fingerprint(st)
	c.inFlight = current != ""
	if !c.decisionDue(st.Now, c.deps.Clock.Now(), before, current) {
		return errors.Join(errs...)
	}
	// The key was taken before the resumes: with nothing in flight before and after them they changed nothing.
	atRestBefore := key != 0 && current == ""
	if len(snap.Candidates) == 0 {
		c.record(&core.Result{}, snap, 0)
		c.decided, c.decidedWith = st.Now, current
		if atRestBefore && len(errs) == 0 {
			c.rest = newRestMemo(st.Now, snap, c.repairDue, key, 0, changes, buffers)
		}
		return errors.Join(errs...)
	}
	// Due only because RestRecheck passed, on the same objects and inputs as a recent decision at rest: it would
	// find nothing again (restMemo.renewed).
	var inputs uint64
	if atRestBefore && len(errs) == 0 {
		inputs = inputsKey(snap)
		if next, ok := prev.renewed(st.Now, snap, c.repairDue, key, inputs, changes, buffers); ok {
			c.rest = next
			c.decided, c.decidedWith = st.Now, current
			return nil
		}
	}
	start := c.deps.Clock.Now()
	snap.Examined = c.examined
	opts := DecisionOptions(c.deps.Settings)
	opts.Scheduling.Memo = c.memo
	res, cpu, err := decideOnThread(ctx, snap, opts)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("deciding: %w", err))...)
	}
	if cpu >= 0 {
		c.deps.Metrics.DisruptionDecisionCPU.Observe(cpu.Seconds())
	}
	c.examined = res.Examined
	c.record(res, snap, c.deps.Clock.Since(start))
	c.logWaiting(ctx, res.Waiting)
	c.announceStays(st, res.Stays)
	c.announceDoNotDisrupt(snap.Candidates, snap.Now)
	c.announceBlockedPools(st, snap.NodeCounts)
	// The commands are prepared in order (each one's check counts the pods of those before it), then written
	// together: one after another, a pass's tens of commands took minutes of API round trips on a busy cluster.
	var ready []*starting
	for _, cmd := range commandsOf(res) {
		if cmd.Decision == core.DecisionReboot {
			if err := c.commitReboot(ctx, st, cmd); err != nil {
				c.commandFailed(ctx, candidateNames(cmd.Candidates)[0], err, &errs)
			}
			continue
		}
		s, err := c.prepare(ctx, st, chk, cmd)
		if err != nil {
			c.commandFailed(ctx, candidateNames(cmd.Candidates)[0], err, &errs)
			continue
		}
		if s != nil {
			ready = append(ready, s)
		}
	}
	decideTook := c.deps.Clock.Since(start)
	var errsMu sync.Mutex
	var deferred atomic.Int32
	startBy := c.deps.Clock.Now().Add(StartWindow)
	workqueue.ParallelizeUntil(ctx, commandWorkers, len(ready), func(i int) {
		if c.deps.Clock.Now().After(startBy) {
			deferred.Add(1)
			return
		}
		if err := c.execute(ctx, st, chk, ready[i]); err != nil {
			errsMu.Lock()
			c.commandFailed(ctx, candidateNames(ready[i].cmd.Candidates)[0], err, &errs)
			errsMu.Unlock()
		}
	})
	if n := deferred.Load(); n > 0 {
		logger.Info("commands left for the next decision", "commands", n, "started", len(ready)-int(n), "window", StartWindow.String())
	}
	if atRestBefore && len(errs) == 0 && fingerprint(st) == "" && len(ready) == 0 && atRest(res, snap) {
		c.rest = newRestMemo(st.Now, snap, c.repairDue, key, inputs, changes, buffers)
	}
	current = fingerprint(st)
	c.inFlight = current != ""
	c.decided, c.decidedWith = st.Now, current
	c.decideEnded = c.deps.Clock.Now()
	c.decideTook = decideTook
	if len(errs) > 0 {
		logger.V(1).Info("pass ended with errors", "errors", len(errs))
	}
	return errors.Join(errs...)
}

// decisionDue says whether a pass decides after moving the commands in progress on. With nothing in flight it
// always does (the loop then runs every PollPeriod). Otherwise a decision is due when a command or a deletion
// ended or started since the last one (before and current are the pass's fingerprints before and after its
// resumes), or PollPeriod after it; but a slow decision (tens of seconds on a large, busy cluster) is not run
// back to back: for as long as it took (at most PollPeriod) after it ended, passes only move commands on (the next
// wave of a drain, a replacement that initialized). passStart is the pass's time, now the clock's.
func (c *Controller) decisionDue(passStart, now time.Time, before, current string) bool {
	switch {
	case current == "":
		return true
	case current == before && current == c.decidedWith && passStart.Sub(c.decided) < PollPeriod:
		return false
	case now.Sub(c.decideEnded) < min(c.decideTook, PollPeriod):
		return false
	}
	return true
}

// commandWorkers bounds the new commands a pass writes at once (each writes its candidates with up to
// writeWorkers requests).
const commandWorkers = 8

// commandFailed handles a command's step that failed: a conflict (another writer changed an object after all
// retries) is expected on a busy cluster and only logged, since the next pass resumes the command; other errors
// are returned.
func (c *Controller) commandFailed(ctx context.Context, command string, err error, errs *[]error) {
	if apierrors.IsConflict(err) {
		log.FromContext(ctx).Info("disruption command step deferred to the next pass", "command", command, "error", err.Error())
		return
	}
	*errs = append(*errs, fmt.Errorf("command %s: %w", command, err))
}

// commandsOf returns the commands a decision found, in order.
func commandsOf(res *core.Result) []*core.Command {
	if len(res.Commands) > 0 {
		return res.Commands
	}
	if res.Command == nil {
		return nil
	}
	return []*core.Command{res.Command}
}

// fingerprint names the commands in progress and the NodeClaims being deleted as the pass's objects now show
// them (with its own writes), for telling whether any ended or started: "" when there are none.
func fingerprint(st *state) string {
	var parts []string
	for _, cmd := range CommandsInProgress(st.View) {
		parts = append(parts, cmd.Record.ID)
	}
	for i := range st.Claims {
		if !st.Claims[i].DeletionTimestamp.IsZero() {
			parts = append(parts, "-"+st.Claims[i].Name)
		}
	}
	return strings.Join(parts, ",")
}

// WholeClusterMinCandidates is the fewest underutilized nodes the controller runs the whole-cluster search for.
const WholeClusterMinCandidates = 10

// DecisionOptions are the decision's options from the controller's settings. The whole-cluster search runs when
// at least WholeClusterMinCandidates nodes are underutilized: it is what lets a large scale-in converge in minutes
// (docs/disruption.md); on fewer nodes multi- and single-node consolidation are cheap and exact.
func DecisionOptions(s *settings.Settings) core.Options {
	return core.Options{
		SpotToSpotConsolidation:   s.FeatureEnabled(settings.FeatureSpotToSpotConsolidation),
		WholeCluster:              true,
		WholeClusterMinCandidates: WholeClusterMinCandidates,
		MaxDriftCommands:          DriftCommandsPerPass,
		Scheduling:                adapter.New(s).Options,
		PodDeletionCostManagement: s.FeatureEnabled(settings.FeaturePodDeletionCostManagement),
		TerminateFirstRepair:      s.FeatureEnabled(settings.FeatureTerminateFirstRepair),
		TerminateFirstDrift:       s.FeatureEnabled(settings.FeatureTerminateFirstDrift),
	}
}

// DriftCommandsPerPass caps the drift commands a decision makes: more than a pass starts in its StartWindow (about
// 25 on a loaded local stack) only costs simulations, which a 658-node drift spent 6 s a decision on for ~345
// commands, of which the pass started 25.
const DriftCommandsPerPass = 64

// observe lists what a pass needs, drops the records it cannot read and groups the commands in progress.
func (c *Controller) observe(ctx context.Context) (*state, error) {
	v, err := ObserveCached(ctx, c.deps, c.deps.Clock.Now())
	if err != nil {
		return nil, err
	}
	st := &state{View: v}
	logger := log.FromContext(ctx)
	c.rememberRecent(v)
	for i := range st.Claims {
		nc := &st.Claims[i]
		raw, ok := nc.Annotations[CommandAnnotationKey]
		if !ok || !nc.DeletionTimestamp.IsZero() {
			continue
		}
		if _, err := disruptionview.DecodeRecord(raw); err != nil {
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

// decideOnThread decides on one OS thread and reports the thread's CPU time for it (-1 where it is not read): the
// decision runs on the calling goroutine only, so that time is its own and its allocations' collector assists,
// unlike its wall time, which a busy machine stretches.
func decideOnThread(ctx context.Context, snap *core.Snapshot, opts core.Options) (res *core.Result, cpu time.Duration, err error) {
	cpu = threadcpu.Run(func() { res, err = core.Decide(ctx, snap, opts) })
	return res, cpu, err
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
			m.NodePoolNodesConsumingBudgets.WithLabelValues(pool, strings.ToLower(string(r))).Set(float64(snap.Disrupting[pool]))
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
// keeps it (do-not-disrupt, a PodDisruptionBudget, a disruption budget), once per change of message; and an
// Unconsolidatable event when consolidation looked at the node and found no move (its NodePool's policy, no
// cheaper replacement, pods that fit nowhere else, spot-to-spot disabled), once per change of message or
// UnconsolidatableRepeat. A pass announces at most StayEventsPerPass stays, those never announced with their
// message first, then the repeats; a stay left out stays unrecorded, so a later pass announces it.
func (c *Controller) announceStays(st *state, stays []core.Stay) {
	seen := map[string]bool{}
	var fresh, repeats []core.Stay
	for _, s := range stays {
		switch s.Reason {
		case core.StayDoNotDisrupt, core.StayPDB, core.StayBudget, core.StayRepairBlocked:
			seen[s.NodeClaim] = true
			if c.blocked[s.NodeClaim] != s.Message {
				fresh = append(fresh, s)
			}
		case core.StayPolicy, core.StayNoCheaper, core.StayPodsDoNotFit, core.StaySpotToSpot:
			seen[s.NodeClaim] = true
			last, ok := c.unconsolidatable[s.NodeClaim]
			switch {
			case !ok || last.message != s.Message:
				fresh = append(fresh, s)
			case st.Now.Sub(last.at) >= UnconsolidatableRepeat:
				repeats = append(repeats, s)
			}
		}
	}
	for i, s := range append(fresh, repeats...) {
		if i == StayEventsPerPass {
			break
		}
		if isUnconsolidatable(s.Reason) {
			c.unconsolidatable[s.NodeClaim] = announced{message: s.Message, at: st.Now}
			c.emitOnNodeAndClaim(st.Nodes[s.Node], st.claim(s.NodeClaim), corev1.EventTypeNormal, karpv1.EventReasonUnconsolidatable, s.Message)
			continue
		}
		c.blocked[s.NodeClaim] = s.Message
		c.emitOnNodeAndClaim(st.Nodes[s.Node], st.claim(s.NodeClaim), corev1.EventTypeNormal, ReasonDisruptionBlocked, "Cannot disrupt: "+s.Message)
	}
	for name := range c.blocked {
		if !seen[name] {
			delete(c.blocked, name)
		}
	}
	for name := range c.unconsolidatable {
		if !seen[name] {
			delete(c.unconsolidatable, name)
		}
	}
}

// isUnconsolidatable reports a stay consolidation found no move for (announced as Unconsolidatable), as opposed
// to one something the user controls keeps (DisruptionBlocked).
func isUnconsolidatable(r core.StayReason) bool {
	switch r {
	case core.StayPolicy, core.StayNoCheaper, core.StayPodsDoNotFit, core.StaySpotToSpot:
		return true
	}
	return false
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

// rememberRecent puts back on the view's NodeClaims the records this controller wrote recently that the cache
// does not show yet (no record, or an older one), so that a pass soon after a start neither decides on those candidates again nor misses the
// command; and forgets the records the cache shows (or that are old).
func (c *Controller) rememberRecent(v *View) {
	c.recentMu.Lock()
	defer c.recentMu.Unlock()
	// Deletions the cache does not show yet: the NodeClaim is deleting in the view too, so that a pass soon
	// after a wave's deletion does not take it for a candidate to delete (and count) again.
	for name, at := range c.deleted {
		if v.Now.Sub(at) > recentStart {
			delete(c.deleted, name)
		}
	}
	for i := range v.Claims {
		nc := &v.Claims[i]
		at, ok := c.deleted[nc.Name]
		switch {
		case !ok:
		case !nc.DeletionTimestamp.IsZero():
			delete(c.deleted, nc.Name)
		default:
			nc.DeletionTimestamp = &metav1.Time{Time: at}
		}
	}
	for name, rec := range c.recent {
		if v.Now.Sub(rec.written) > recentStart {
			delete(c.recent, name) // including NodeClaims that are gone
		}
	}
	for i := range v.Claims {
		nc := &v.Claims[i]
		rec, ok := c.recent[nc.Name]
		if !ok {
			continue
		}
		// The cache shows what was written (or the write is old, or the NodeClaim is going): forgotten. A record
		// the cache shows otherwise is an older one (the command launched more replacements since): ours wins.
		if cur, has := nc.Annotations[CommandAnnotationKey]; has && cur == rec.raw || v.Now.Sub(rec.written) > recentStart || !nc.DeletionTimestamp.IsZero() {
			delete(c.recent, nc.Name)
			continue
		}
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[CommandAnnotationKey] = rec.raw
	}
}

// waitedLong returns, by command ID, when each command that has waited ContentionFirst or longer for other moving
// pods to land first waited.
func (c *Controller) waitedLong(now time.Time) map[string]time.Time {
	out := map[string]time.Time{}
	for id, since := range c.contended {
		if now.Sub(since) >= ContentionFirst {
			out[id] = since
		}
	}
	return out
}
