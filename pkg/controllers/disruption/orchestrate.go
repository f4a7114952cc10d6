package disruption

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	core "github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/metrics"
	"github.com/dovetail/dovetail/pkg/repair"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// start carries out a new command in an order that the next pass can finish from any step: record the command
// (with the replacements to launch, named in advance) on every candidate, taint their Nodes, create the
// replacements (each pointing back at the command). A command without replacements is checked and its
// candidates deleted at once. A step that fails leaves the command recorded: resume finishes it.
func (c *Controller) start(ctx context.Context, st *state, chk *drainChecker, cmd *core.Command) error {
	s, err := c.prepare(ctx, st, chk, cmd)
	if err != nil || s == nil {
		return err
	}
	return c.execute(ctx, st, chk, s)
}

// starting is a command prepare found ready to start: its record, encoded, and its candidates' NodeClaims.
type starting struct {
	cmd        *core.Command
	record     Record
	raw        string
	candidates []*karpv1.NodeClaim
}

// prepare builds a new command's record and, for a command without replacements, checks that its pods fit on the
// nodes there are now (beside the commands prepared before it in the pass); nil when the command does not start.
// It writes nothing, so the commands of a pass are prepared one after another (the check counts the pods of those
// before) and executed together.
func (c *Controller) prepare(ctx context.Context, st *state, chk *drainChecker, cmd *core.Command) (*starting, error) {
	logger := log.FromContext(ctx)
	var candidates []*karpv1.NodeClaim
	for _, cand := range cmd.Candidates {
		nc := st.claim(cand.NodeClaim)
		if nc == nil {
			return nil, fmt.Errorf("candidate nodeclaim %s is gone from the cache", cand.NodeClaim)
		}
		candidates = append(candidates, nc)
	}
	first := cmd.Candidates[0].NodeClaim
	r := Record{
		ID:                first + "-" + strconv.FormatInt(st.Now.Unix(), 10),
		Reason:            cmd.Reason,
		Decision:          cmd.Decision,
		ConsolidationType: cmd.ConsolidationType,
		Replacements:      len(cmd.Replacements),
		Started:           st.Now.UTC().Truncate(1e9),
		Message:           cmd.Message(),
		Plan:              cmd.Plan,
		Candidates:        len(candidates),
	}
	if rep := cmd.Candidates[0].Repair; cmd.Reason == karpv1.DisruptionReasonUnhealthy && rep != nil {
		r.Condition = rep.Condition
		if rep.DrainBound != nil {
			r.DrainBound = rep.DrainBound.String()
		}
	}
	for _, plan := range cmd.Replacements {
		if st.NodePools[plan.NodePool] == nil {
			logger.Info("not starting disruption: the nodepool of its replacement is gone", "nodepool", plan.NodePool, "nodeclaims", candidateNames(cmd.Candidates))
			c.deps.Metrics.DisruptionFailedValidations.WithLabelValues(cmd.ConsolidationType).Add(float64(len(candidates)))
			return nil, nil
		}
		r.Launch = append(r.Launch, launchOf(plan, st.replacementName(plan.NodePool)))
	}
	if len(cmd.Replacements) == 0 && cmd.Decision != core.DecisionTerminateFirst {
		// Nothing to wait for: the pods must fit on the nodes there are now, beside those of the other commands
		// draining. A terminate-first command's pods do not: they wait for the node its deletion makes room for.
		why, _, err := chk.check(ctx, &InProgress{Record: r, Candidates: candidates})
		if err != nil {
			return nil, err
		}
		if why != "" {
			logger.Info(LogNotStarted, "nodeclaims", candidateNames(cmd.Candidates), "why", why)
			c.deps.Metrics.DisruptionFailedValidations.WithLabelValues(cmd.ConsolidationType).Add(float64(len(candidates)))
			return nil, nil
		}
	}
	raw, err := r.Encode()
	if err != nil {
		return nil, err
	}
	return &starting{cmd: cmd, record: r, raw: raw, candidates: candidates}, nil
}

// launchOf keeps what creating a planned replacement needs, under the given name.
func launchOf(plan *scheduling.NodeClaimPlan, name string) Launch {
	l := Launch{Name: name, NodePool: plan.NodePool, Requests: plan.Requests}
	for _, req := range plan.Requirements {
		l.Requirements = append(l.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
			NodeSelectorRequirement: req.NodeSelectorRequirement, MinValues: req.MinValues})
	}
	return l
}

// execute writes a prepared command: its record on every candidate, then what finishStart does, then, for a
// command without replacements, the deletion of its first wave of candidates.
func (c *Controller) execute(ctx context.Context, st *state, chk *drainChecker, s *starting) error {
	logger := log.FromContext(ctx)
	cmd, r, raw, candidates := s.cmd, s.record, s.raw, s.candidates
	logger.Info(LogStarted, "command", r.ID, "reason", r.Reason, "decision", r.Decision, "consolidation-type", r.ConsolidationType,
		"nodeclaims", candidateNames(cmd.Candidates), "replacements", len(cmd.Replacements), "savings-per-hour", cmd.Savings)
	c.deps.Metrics.DisruptionDecisions.WithLabelValues(r.Decision, strings.ToLower(string(r.Reason)), r.ConsolidationType).Inc()
	c.deps.Metrics.DisruptionEvictions.WithLabelValues(strings.ToLower(string(r.Reason))).Add(float64(cmd.Evictions))
	if r.Reason != karpv1.DisruptionReasonDrifted && cmd.Savings > 0 {
		c.deps.Metrics.DisruptionSaved.WithLabelValues(strings.ToLower(string(r.Reason))).Add(cmd.Savings)
	}
	c.announceConsolidation(st, cmd, candidates)
	pools := map[string]bool{}
	for _, cand := range cmd.Candidates {
		if !pools[cand.NodePool] {
			pools[cand.NodePool] = true
			c.deps.Metrics.DisruptionDecisionsByNodePool.WithLabelValues(r.Decision, strings.ToLower(string(r.Reason)), r.ConsolidationType, cand.NodePool).Inc()
			if cmd.TerminateFirstReason != "" {
				c.deps.Metrics.TerminateFirstDecisions.WithLabelValues(cand.NodePool, strings.ToLower(string(r.Reason)), cmd.TerminateFirstReason).Inc()
			}
		}
	}

	in := &InProgress{Record: r}
	errs := c.forEach(ctx, len(candidates), func(i int) error { return c.markCandidate(ctx, candidates[i], raw) })
	for i, nc := range candidates {
		if errs[i] == nil {
			in.Candidates = append(in.Candidates, nc)
		}
	}
	if err := errors.Join(errs...); err != nil {
		if len(in.Candidates) == 0 {
			return err // nothing recorded: the command never started
		}
		return fmt.Errorf("command %s: %w", r.ID, err)
	}
	if len(cmd.Replacements) > 0 {
		// The condition is for users (the command does not depend on it): written beside the taints and the
		// replacements rather than after them, a round trip less per command on a busy API server.
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.setConditions(ctx, in)
		}()
		err := c.finishStart(ctx, st, in)
		<-done
		return err
	}
	if err := c.finishStart(ctx, st, in); err != nil {
		return err
	}
	// The first wave gets its condition before it is deleted (termination then writes the NodeClaims, so a
	// condition patched later would conflict); the other candidates get theirs after, since the command does not
	// depend on it and the first wave starts draining sooner (on a busy API server a 64-node command's writes took
	// half a minute).
	wave := drainWave(in, chk.bound)
	c.setConditions(ctx, &InProgress{Record: r, Candidates: wave})
	if err := c.terminate(ctx, st, in, wave); err != nil {
		return err
	}
	rest := &InProgress{Record: r}
	for _, nc := range in.Candidates {
		if !slices.Contains(wave, nc) {
			rest.Candidates = append(rest.Candidates, nc)
		}
	}
	c.setConditions(ctx, rest)
	return nil
}

// setConditions sets the DisruptionReason condition on the command's candidates that lack it. Users see the
// condition; the command does not depend on it, so a failure is only logged (the next pass sets it).
func (c *Controller) setConditions(ctx context.Context, cmd *InProgress) {
	r := cmd.Record
	c.forEach(ctx, len(cmd.Candidates), func(i int) error {
		nc := cmd.Candidates[i]
		if cond := nc.GetCondition(karpv1.ConditionTypeDisruptionReason); cond == nil || cond.Status != metav1.ConditionTrue {
			if err := c.setCondition(ctx, nc, r); err != nil {
				log.FromContext(ctx).Info("condition not set yet", "command", r.ID, "nodeclaim", nc.Name, "error", err.Error())
			}
		}
		return nil
	})
}

// finishStart does what start may have left undone for a command in progress: the taint on its candidates'
// Nodes and the replacements not created yet. It is idempotent.
func (c *Controller) finishStart(ctx context.Context, st *state, cmd *InProgress) error {
	r := cmd.Record
	var errs []error
	taints := c.forEach(ctx, len(cmd.Candidates), func(i int) error {
		return c.taint(ctx, st.Nodes[cmd.Candidates[i].Status.NodeName])
	})
	if err := errors.Join(taints...); err != nil {
		return err // no replacement launches for a candidate that still takes new pods
	}
	have := map[string]bool{}
	for _, nc := range cmd.Replacements {
		have[nc.Name] = true
	}
	var created []string
	for _, l := range r.Launch {
		if have[l.Name] {
			continue
		}
		np := st.NodePools[l.NodePool]
		if np == nil {
			errs = append(errs, fmt.Errorf("nodepool %s of replacement %s is gone", l.NodePool, l.Name))
			continue
		}
		nc := solver.BuildNodeClaim(solver.NewNodeClaim{NodePool: np, Requests: l.Requests, Requirements: l.Requirements})
		nc.GenerateName, nc.Name = "", l.Name
		nc.Annotations[ReplacementForAnnotationKey] = r.ID
		err := c.deps.Client.Create(ctx, nc)
		switch {
		case apierrors.IsAlreadyExists(err):
			continue // created by an earlier pass; the cache has not caught up
		case err != nil:
			errs = append(errs, fmt.Errorf("creating replacement nodeclaim %s: %w", l.Name, err))
			continue
		}
		created = append(created, nc.Name)
		c.deps.Metrics.CountNodeClaimCreated(strings.ToLower(string(r.Reason)), np.Name, nc)
	}
	if len(created) > 0 {
		for _, nc := range cmd.Candidates {
			c.deps.Recorder.Eventf(nc, corev1.EventTypeNormal, ReasonDisruptionLaunching,
				"Launching %s for %s: %s", plural(len(created), "replacement"), strings.ToLower(string(r.Reason)), strings.Join(created, ", "))
		}
		log.FromContext(ctx).Info("launched replacements", "command", r.ID, "replacements", created)
	}
	return errors.Join(errs...)
}

// resume moves a command in progress on: finish what start left undone, delete the candidates once every
// replacement is initialized and their pods fit on the nodes there are now, abandon the command when a
// replacement is lost or does not initialize in time or the pods keep not fitting, otherwise wait.
func (c *Controller) resume(ctx context.Context, st *state, chk *drainChecker, cmd *InProgress) error {
	r := cmd.Record
	age := st.Now.Sub(r.Since())
	for _, nc := range cmd.Replacements {
		if !nc.DeletionTimestamp.IsZero() {
			return c.abort(ctx, st, cmd, fmt.Sprintf("replacement nodeclaim %s is being deleted", nc.Name))
		}
		if cond := nc.GetCondition(karpv1.ConditionTypeLaunched); cond != nil && cond.Status == "False" && cond.Reason != karpv1.ReasonUnknown {
			// A launch that failed for good (the lifecycle controller deletes such NodeClaims) ends the command now.
			if cond.Reason != karpv1.ReasonInsufficientCapacity {
				return c.abort(ctx, st, cmd, fmt.Sprintf("replacement nodeclaim %s failed to launch: %s", nc.Name, cond.Message))
			}
		}
	}
	switch {
	case len(cmd.Replacements) < r.Replacements && (len(r.Launch) == 0 && age > missingReplacementGrace || age > ReplacementTimeout):
		return c.abort(ctx, st, cmd, fmt.Sprintf("only %d of %d replacement nodeclaims exist", len(cmd.Replacements), r.Replacements))
	case len(cmd.Replacements) < r.Replacements && len(r.Launch) == 0:
		return nil // the cache catching up
	}
	if taken := takenName(st, cmd); taken != "" {
		// Another NodeClaim has the name: creating the replacement would fail for ever (AlreadyExists).
		return c.abort(ctx, st, cmd, fmt.Sprintf("the name of its replacement %s is taken by another nodeclaim", taken))
	}
	if err := c.syncRecords(ctx, cmd); err != nil {
		return err
	}
	if err := c.finishStart(ctx, st, cmd); err != nil {
		return err
	}
	c.setConditions(ctx, cmd)
	if len(cmd.Replacements) < r.Replacements {
		return nil // just created, or the cache catching up
	}
	var waiting []string
	for _, nc := range cmd.Replacements {
		if !nc.IsTrue(karpv1.ConditionTypeInitialized) || st.Nodes[nc.Status.NodeName] == nil {
			waiting = append(waiting, nc.Name+" ("+notInitialized(nc)+")")
		}
	}
	switch {
	case len(waiting) > 0 && age > ReplacementTimeout:
		return c.shrink(ctx, st, chk, cmd, fmt.Sprintf("replacements not initialized within %s: %s", ReplacementTimeout, strings.Join(waiting, ", ")))
	case len(waiting) > 0:
		log.FromContext(ctx).V(1).Info("waiting for replacements", "command", r.ID, "waiting", waiting)
		return nil
	}
	// The candidates go in waves (drainWave): the next wave waits until the pods of the earlier ones have left
	// their nodes, so that it is checked against where the kube-scheduler put them rather than against the plan.
	if busy := undrained(cmd.Draining, chk.bound); len(busy) > 0 {
		since, ok := c.waveWait[r.ID]
		if !ok {
			since = st.Now
			c.waveWait[r.ID] = since
		}
		if st.Now.Sub(since) > WaveTimeout {
			delete(c.waveWait, r.ID)
			return c.abort(ctx, st, cmd, fmt.Sprintf("the nodes of its earlier wave did not drain within %s: %s", WaveTimeout, strings.Join(busy, ", ")))
		}
		log.FromContext(ctx).V(1).Info("waiting for the earlier wave to drain", "command", r.ID, "draining", busy, "left", len(cmd.Candidates))
		// The later waves keep the room they will need: a command started now must fit beside them.
		chk.hold(cmd)
		return nil
	}
	delete(c.waveWait, r.ID)
	if len(cmd.Candidates) < cmd.total() {
		// Earlier waves drained and the kube-scheduler placed their pods otherwise than planned: the candidates
		// whose pods still fit go on, the others stay in service at once (the next decision plans them from the
		// cluster as it is, which does better than waiting).
		return c.nextWave(ctx, st, chk, cmd)
	}
	why, contended, err := "", false, error(nil)
	if r.Decision != core.DecisionTerminateFirst {
		// A terminate-first command's pods do not fit until its node is gone: they wait for the room it leaves.
		why, contended, err = chk.check(ctx, cmd)
	}
	if err != nil {
		return err
	}
	if contended {
		// Not a failure: other pods on their way could take the room of its pods; they land within seconds.
		since, ok := c.contended[r.ID]
		if !ok {
			since = st.Now
			c.contended[r.ID] = since
		}
		if waited := st.Now.Sub(since); waited <= ContentionWait {
			log.FromContext(ctx).V(1).Info("not draining yet: waiting for other moving pods to land", "command", r.ID, "why", why)
			if waited >= ContentionFirst {
				// It has waited long: the commands checked after it wait for it, rather than it for them.
				chk.await(cmd)
				return nil
			}
			// Its replacements are its pods' room: the commands checked after it must fit beside them.
			chk.hold(cmd)
			return nil
		}
		log.FromContext(ctx).Info(LogDrainedAfterContention, "command", r.ID,
			"waited", ContentionWait.String(), "why", why)
		chk.admit(cmd)
		why = ""
	}
	delete(c.contended, r.ID)
	if why != "" && r.Reason == karpv1.DisruptionReasonDrifted && len(r.Launch) > 0 && r.Extra < MaxExtraLaunches {
		// The replacements are there, but the kube-scheduler put other pods (of other nodes being drained) on
		// them: launch what the pods left over need rather than give up the replacements already running. Only
		// for drift, which must replace its nodes whatever the price; a consolidation that needs more than it
		// planned would no longer save what it was decided for, and is abandoned (the next decision plans again).
		launched, err := c.launchExtra(ctx, st, chk, cmd, why)
		if err != nil || launched {
			return err
		}
	}
	if why != "" {
		since, ok := c.validating[r.ID]
		if !ok {
			since = st.Now
			c.validating[r.ID] = since
			for _, nc := range cmd.Candidates {
				c.deps.Recorder.Eventf(nc, corev1.EventTypeNormal, ReasonDisruptionWaitingReadiness, "Not draining yet: %s", why)
			}
		}
		if st.Now.Sub(since) > ValidationTimeout {
			delete(c.validating, r.ID)
			return c.shrink(ctx, st, chk, cmd, fmt.Sprintf("the pods of its nodes did not fit on the nodes there are for %s: %s", ValidationTimeout, why))
		}
		log.FromContext(ctx).Info("not draining yet: the pods would not fit", "command", r.ID, "why", why)
		return nil
	}
	delete(c.validating, r.ID)
	st.queueWave(cmd, drainWave(cmd, chk.bound))
	return nil
}

// MaxExtraLaunches bounds how many times a replace command launches more replacements (launchExtra): the
// kube-scheduler may fill the new ones with other pods too, and after that the command is abandoned as before.
// Each launch is used: it goes out only when a pod to move (or a pending pod it would displace) has no room, and
// whichever pod the kube-scheduler puts there has a node. In the full-size drift benchmark with at most 2, 81 of
// 651 commands launched twice and 38 of them were filled again and abandoned a minute later, each holding its
// node that long (the last one the whole drift's last minute).
const MaxExtraLaunches = 4

// launchExtra launches new replacements for the pods of a replace command whose replacements initialized but
// were filled by other pods (why is the failed check's answer): the command's record gets the new launches (on
// every candidate), and the command waits for them as for its first replacements. It reports whether it
// launched any; it launches none when the pods fit on new capacity nowhere either.
func (c *Controller) launchExtra(ctx context.Context, st *state, chk *drainChecker, cmd *InProgress, why string) (bool, error) {
	logger := log.FromContext(ctx)
	plans, whyNot, err := chk.extra(ctx, cmd)
	if err != nil || len(plans) == 0 {
		if whyNot != "" {
			logger.Info("no more replacements would let the command drain", "command", cmd.Record.ID, "why", whyNot)
		}
		return false, err
	}
	r := cmd.Record
	r.Launch = slices.Clone(r.Launch)
	var names []string
	for _, plan := range plans {
		if st.NodePools[plan.NodePool] == nil {
			return false, nil // the decision's NodePools are the cache's: gone meanwhile
		}
		l := launchOf(plan, st.replacementName(plan.NodePool))
		l.Extra = true
		for _, key := range plan.Pods {
			l.For = append(l.For, key.String())
		}
		r.Launch = append(r.Launch, l)
		names = append(names, l.Name)
	}
	r.Replacements += len(plans)
	r.Extra++
	r.Launched = st.Now.UTC().Truncate(time.Second)
	raw, err := r.Encode()
	if err != nil {
		return false, err
	}
	// The record first, so that a restart finds the replacements the command is waiting for.
	errs := c.forEach(ctx, len(cmd.Candidates), func(i int) error { return c.markCandidate(ctx, cmd.Candidates[i], raw) })
	if len(errs) > 0 && !slices.Contains(errs, nil) {
		return false, errors.Join(errs...) // recorded on none: the command goes on as it was
	}
	cmd.Record = r
	delete(c.validating, r.ID)
	logger.Info(LogExtraReplacements,
		"command", r.ID, "replacements", names, "extra", r.Extra, "why", why)
	return true, errors.Join(append(errs, c.finishStart(ctx, st, cmd))...)
}

// syncRecords writes the command's record on the candidates that carry an older one of the same command (a pass
// that launched more replacements was cut short).
func (c *Controller) syncRecords(ctx context.Context, cmd *InProgress) error {
	var stale []*karpv1.NodeClaim
	for _, nc := range cmd.Candidates {
		if r, ok, err := RecordOf(nc); ok && err == nil && r.Extra < cmd.Record.Extra {
			stale = append(stale, nc)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	raw, err := cmd.Record.Encode()
	if err != nil {
		return err
	}
	return errors.Join(c.forEach(ctx, len(stale), func(i int) error { return c.markCandidate(ctx, stale[i], raw) })...)
}

// nextWave deletes the next wave of a command whose earlier waves drained, from the candidates whose pods fit on
// the nodes there are now; the others leave the command (record and taint removed).
func (c *Controller) nextWave(ctx context.Context, st *state, chk *drainChecker, cmd *InProgress) error {
	r := cmd.Record
	delete(c.validating, r.ID)
	keep, dropped, why, err := chk.fitting(ctx, cmd)
	if err != nil {
		return err
	}
	drained := cmd.total() - len(cmd.Candidates)
	if len(keep) == 0 {
		return c.abort(ctx, st, cmd, fmt.Sprintf("after %d of %d nodes drained, the pods of the others no longer fit: %s",
			drained, cmd.total(), why))
	}
	if len(dropped) > 0 {
		log.FromContext(ctx).Info(LogShrunk, "command", r.ID,
			"kept", len(keep), "released", claimNames(dropped), "why", why)
		c.deps.Metrics.DisruptionQueueFailures.WithLabelValues(r.Decision, strings.ToLower(string(r.Reason)), r.ConsolidationType).Inc()
		if err := errors.Join(c.forEach(ctx, len(dropped), func(i int) error {
			c.deps.Recorder.Eventf(dropped[i], corev1.EventTypeNormal, ReasonDisruptionAborted,
				"Left out of disruption (%s) after %d of %d nodes drained: its pods no longer fit: %s", r.Message, drained, cmd.total(), why)
			return c.clearCandidate(ctx, st, dropped[i])
		})...); err != nil {
			return err
		}
		cmd.Candidates = keep
	}
	st.queueWave(cmd, drainWave(cmd, chk.bound))
	return nil
}

// shrink is what a command does when the world changed under it (its pods stopped fitting, a replacement did not
// come): rather than abandon the work already paid for (replacements running, nodes tainted), it goes on with the
// candidates whose pods fit on the nodes there are now and releases the others (record and taint removed, a
// DisruptionAborted event saying why each left). It abandons the command only when none fit.
func (c *Controller) shrink(ctx context.Context, st *state, chk *drainChecker, cmd *InProgress, why string) error {
	r := cmd.Record
	keep, dropped, _, err := chk.fitting(ctx, cmd)
	if err != nil {
		return err
	}
	if len(keep) == 0 {
		return c.abort(ctx, st, cmd, why)
	}
	if len(dropped) > 0 {
		log.FromContext(ctx).Info(LogShrunk, "command", r.ID,
			"kept", len(keep), "released", claimNames(dropped), "why", why)
		if err := errors.Join(c.forEach(ctx, len(dropped), func(i int) error {
			c.deps.Recorder.Eventf(dropped[i], corev1.EventTypeNormal, ReasonDisruptionAborted,
				"Left out of disruption (%s), which goes on with %d node(s): %s", r.Message, len(keep), why)
			return c.clearCandidate(ctx, st, dropped[i])
		})...); err != nil {
			return err
		}
		cmd.Candidates = keep
	}
	delete(c.validating, r.ID)
	st.queueWave(cmd, drainWave(cmd, chk.bound))
	return nil
}

// claimNames returns the NodeClaims' names.
func claimNames(ncs []*karpv1.NodeClaim) []string {
	out := make([]string, 0, len(ncs))
	for _, nc := range ncs {
		out = append(out, nc.Name)
	}
	return out
}

// notInitialized says what a replacement still lacks.
func notInitialized(nc *karpv1.NodeClaim) string {
	for _, t := range karpv1.NodeClaimReadinessConditions() {
		cond := nc.GetCondition(t)
		if cond == nil || cond.Status != "True" {
			if cond != nil && cond.Message != "" {
				return "not " + t + ": " + cond.Message
			}
			return "not " + t
		}
	}
	return "not initialized"
}

// Waves of a command's deletions. The pods of a drained node are placed again by the kube-scheduler, which
// scores nodes its own way (LeastAllocated spreads them) rather than as the decision planned: a 64-node command
// drained at once left large pods without room in a full-size run. So a command's candidates are deleted in
// waves, the nodes holding the largest pods first (they get the most room), and each later wave only once the
// earlier one's pods have left, after the drain check passed again on the cluster as the kube-scheduler filled
// it. A wave is at least MinDrainWave candidates, and a command takes at most DrainWaves waves.
const (
	MinDrainWave = 8
	DrainWaves   = 4
	// WaveTimeout is how long the rest of a command waits for an earlier wave to drain (a PodDisruptionBudget
	// can hold an eviction) before it is abandoned and its candidates stay in service.
	WaveTimeout = 5 * time.Minute
)

// drainWave returns the candidates of a command to delete now: those without pods to move, and up to a wave of
// the others, those holding the largest pods first (by name among equals).
func drainWave(cmd *InProgress, bound map[string][]*corev1.Pod) []*karpv1.NodeClaim {
	size := max(MinDrainWave, (cmd.total()+DrainWaves-1)/DrainWaves)
	type ranked struct {
		nc      *karpv1.NodeClaim
		biggest float64
	}
	var wave []*karpv1.NodeClaim
	var busy []ranked
	for _, nc := range cmd.Candidates {
		biggest, pods := 0.0, 0
		for _, p := range bound[nc.Status.NodeName] {
			if core.Reschedulable(p) {
				pods++
				biggest = max(biggest, podSize(p))
			}
		}
		if pods == 0 {
			wave = append(wave, nc)
			continue
		}
		busy = append(busy, ranked{nc, biggest})
	}
	slices.SortStableFunc(busy, func(a, b ranked) int {
		if a.biggest != b.biggest {
			return cmp.Compare(b.biggest, a.biggest)
		}
		return strings.Compare(a.nc.Name, b.nc.Name)
	})
	for _, r := range busy[:min(size, len(busy))] {
		wave = append(wave, r.nc)
	}
	return wave
}

// largestFirst returns the commands in the order a pass checks them: those with a wave draining first (their
// later waves keep their room, see drainChecker.hold), then those that have waited ContentionFirst or longer for
// other moving pods to land, longest first (waited, by command ID: when each first waited), then those whose
// candidates hold the largest pod first (by ID among equals). Large pods need the emptiest nodes, which the
// kube-scheduler gives smaller pods first when they move at the same time; checked first, the commands of the
// large pods drain first and the others wait for them to land (drainChecker.check), but not for ever.
func largestFirst(cmds []*InProgress, bound map[string][]*corev1.Pod, waited map[string]time.Time) []*InProgress {
	biggest := make(map[*InProgress]float64, len(cmds))
	for _, cmd := range cmds {
		for _, nc := range cmd.Candidates {
			for _, p := range bound[nc.Status.NodeName] {
				if core.Reschedulable(p) {
					biggest[cmd] = max(biggest[cmd], podSize(p))
				}
			}
		}
	}
	out := slices.Clone(cmds)
	slices.SortStableFunc(out, func(a, b *InProgress) int {
		if da, db := len(a.Draining) > 0, len(b.Draining) > 0; da != db {
			if da {
				return -1
			}
			return 1
		}
		wa, aged := waited[a.Record.ID]
		wb, bged := waited[b.Record.ID]
		switch {
		case aged && bged:
			if c := wa.Compare(wb); c != 0 {
				return c
			}
		case aged:
			return -1
		case bged:
			return 1
		}
		if c := cmp.Compare(biggest[b], biggest[a]); c != 0 {
			return c
		}
		return strings.Compare(a.Record.ID, b.Record.ID)
	})
	return out
}

// podSize ranks pods for drainWave: cores requested plus GiB of memory over 4 (the memory per core of general
// purpose instances), so that either resource makes a pod large.
func podSize(p *corev1.Pod) float64 {
	r := scheduling.PodRequests(p)
	return r.Cpu().AsApproximateFloat64() + r.Memory().AsApproximateFloat64()/(4<<30)
}

// undrained names the nodes of earlier waves that still hold pods to move.
func undrained(draining []*karpv1.NodeClaim, bound map[string][]*corev1.Pod) []string {
	var out []string
	for _, nc := range draining {
		if slices.ContainsFunc(bound[nc.Status.NodeName], core.Reschedulable) {
			out = append(out, nc.Status.NodeName)
		}
	}
	return out
}

// queuedWave is a wave of a command in progress that a pass's resume cleared to drain.
type queuedWave struct {
	cmd  *InProgress
	wave []*karpv1.NodeClaim
}

// queueWave leaves a wave cleared by resume for terminateQueued: the checks of a pass run one after another (each
// counts the pods of those before it), the deletions they clear together after them. Deleted one resume at a
// time, a 650-node drift went at about one node a second on a busy API server.
func (st *state) queueWave(cmd *InProgress, wave []*karpv1.NodeClaim) {
	st.waves = append(st.waves, queuedWave{cmd: cmd, wave: wave})
}

// terminateQueued deletes the waves the pass's resumes cleared, up to writeWorkers NodeClaims at once, and
// reports each command's failure as the resume would have.
func (c *Controller) terminateQueued(ctx context.Context, st *state, errs *[]error) {
	type one struct {
		q  *queuedWave
		nc *karpv1.NodeClaim
	}
	var all []one
	for i := range st.waves {
		q := &st.waves[i]
		if left := len(q.cmd.Candidates) - len(q.wave); left > 0 {
			log.FromContext(ctx).Info("draining in waves", "command", q.cmd.Record.ID, "wave", len(q.wave), "left", left)
		}
		for _, nc := range q.wave {
			all = append(all, one{q, nc})
		}
	}
	// The replacements of the commands about to drain give up their hold first, so that their pods find them.
	var held []*corev1.Node
	for i := range st.waves {
		for _, nc := range st.waves[i].cmd.Replacements {
			if n := st.Nodes[nc.Status.NodeName]; n != nil && hasHoldTaint(n) {
				held = append(held, n)
			}
		}
	}
	st.waves = nil
	for _, err := range c.forEach(ctx, len(held), func(i int) error { return c.liftHold(ctx, held[i]) }) {
		if err != nil {
			// Only a preference of the kube-scheduler's: the drain goes on, and the orphan sweep lifts it later.
			log.FromContext(ctx).Info("replacement hold not lifted", "error", err.Error())
		}
	}
	failed := c.forEach(ctx, len(all), func(i int) error { return c.deleteCandidate(ctx, st, all[i].q.cmd.Record, all[i].nc) })
	byCommand := map[*InProgress][]error{}
	for i, err := range failed {
		if err != nil {
			byCommand[all[i].q.cmd] = append(byCommand[all[i].q.cmd], err)
		}
	}
	for cmd, e := range byCommand {
		c.commandFailed(ctx, cmd.Record.ID, errors.Join(e...), errs)
	}
}

// terminate deletes a wave of the command's candidates; the termination controllers drain them within their
// grace periods. The others keep the command's record and taint and are deleted by later passes.
func (c *Controller) terminate(ctx context.Context, st *state, cmd *InProgress, wave []*karpv1.NodeClaim) error {
	r := cmd.Record
	if left := len(cmd.Candidates) - len(wave); left > 0 {
		log.FromContext(ctx).Info("draining in waves", "command", r.ID, "wave", len(wave), "left", left)
	}
	return errors.Join(c.forEach(ctx, len(wave), func(i int) error { return c.deleteCandidate(ctx, st, r, wave[i]) })...)
}

// deleteCandidate deletes one candidate of the command; the termination controllers drain it. DisruptionTerminating
// goes on the NodeClaim and on its Node.
func (c *Controller) deleteCandidate(ctx context.Context, st *state, r Record, nc *karpv1.NodeClaim) error {
	var node *corev1.Node
	if nc.Status.NodeName != "" {
		node = st.Nodes[nc.Status.NodeName]
	}
	if err := c.stampRepairDeadline(ctx, r, nc); err != nil {
		return err
	}
	c.emitOnNodeAndClaim(node, nc, corev1.EventTypeNormal, ReasonDisruptionTerminating, "Disrupting: "+r.Message)
	if err := c.deps.Client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err)
	}
	// The pass's objects show it deleting, as the cache soon will; the next passes too, until it does.
	now := c.deps.Clock.Now()
	nc.DeletionTimestamp = &metav1.Time{Time: now}
	c.recentMu.Lock()
	c.deleted[nc.Name] = now
	c.recentMu.Unlock()
	deps.CountDisrupted(ctx, c.deps, nc, strings.ToLower(string(r.Reason)), consolidationPolicy(st, r, nc))
	if r.Reason == karpv1.DisruptionReasonUnhealthy && r.Condition != "" {
		c.deps.Metrics.NodeClaimsUnhealthyDisrupted.WithLabelValues(repair.ConditionLabel(r.Condition), nc.NodePoolName(),
			nc.Labels[karpv1.CapacityTypeLabelKey], nc.Status.ImageID).Inc()
	}
	if now.Sub(nc.CreationTimestamp.Time) < ShortLived {
		c.deps.Metrics.DisruptionShortLived.WithLabelValues(strings.ToLower(string(r.Reason)), nc.NodePoolName()).Inc()
	}
	log.FromContext(ctx).Info("deleted disrupted nodeclaim", "command", r.ID, "nodeclaim", nc.Name, "node", nc.Status.NodeName, "reason", r.Reason)
	return nil
}

// ShortLived is the lifetime below which a node disruption deletes counts as a wasted launch
// (dovetail_disruption_short_lived_nodes_total).
const ShortLived = 2 * time.Minute

// consolidationPolicy is the consolidation_policy label of a candidate the command deletes: its NodePool's
// consolidationPolicy for a consolidation (Empty, Underutilized), "" for drift.
func consolidationPolicy(st *state, r Record, nc *karpv1.NodeClaim) string {
	if r.Reason != karpv1.DisruptionReasonEmpty && r.Reason != karpv1.DisruptionReasonUnderutilized || st == nil || st.View == nil {
		return ""
	}
	np := st.NodePools[nc.NodePoolName()]
	if np == nil {
		return ""
	}
	return metrics.ConsolidationPolicyLabel(np.Spec.Disruption.ConsolidationPolicy)
}

// writeWorkers bounds the API writes one step of a command makes at once: a 64-node command written one object
// at a time took minutes on a busy API server (record, condition, taint and delete for each candidate).
const writeWorkers = 16

// forEach runs f for 0..n-1 on up to writeWorkers goroutines and returns each call's error by index.
func (c *Controller) forEach(ctx context.Context, n int, f func(i int) error) []error {
	errs := make([]error, n)
	workqueue.ParallelizeUntil(ctx, writeWorkers, n, func(i int) { errs[i] = f(i) })
	if err := ctx.Err(); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err // not run, or cut short
			}
		}
	}
	return errs
}

// abort abandons a command: the candidates lose their record, condition and taint and stay in service.
// Replacements already launched stay too; consolidation removes them later if they are not needed.
func (c *Controller) abort(ctx context.Context, st *state, cmd *InProgress, why string) error {
	r := cmd.Record
	log.FromContext(ctx).Info(LogAbandoned, "command", r.ID, "why", why)
	c.deps.Metrics.DisruptionQueueFailures.WithLabelValues(r.Decision, strings.ToLower(string(r.Reason)), r.ConsolidationType).Inc()
	c.announceRejected(st, r, cmd.Candidates, why)
	return errors.Join(c.forEach(ctx, len(cmd.Candidates), func(i int) error {
		nc := cmd.Candidates[i]
		c.deps.Recorder.Eventf(nc, corev1.EventTypeWarning, ReasonDisruptionAborted, "Disruption abandoned (%s): %s", r.Message, why)
		return c.clearCandidate(ctx, st, nc)
	})...)
}

// markCandidate records the command on a candidate (its annotation is what the next pass resumes from), then
// the DisruptionReason condition users see. The annotation is set by a merge patch of that one key: it needs no
// lock, since it cannot undo another writer's change, so a concurrent update of the NodeClaim does not fail it.
func (c *Controller) markCandidate(ctx context.Context, nc *karpv1.NodeClaim, raw string) error {
	patch := client.MergeFrom(nc.DeepCopy())
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[CommandAnnotationKey] = raw
	if err := c.deps.Client.Patch(ctx, nc, patch); err != nil {
		return fmt.Errorf("recording disruption on nodeclaim %s: %w", nc.Name, err)
	}
	c.recentMu.Lock()
	c.recent[nc.Name] = recentRecord{raw: raw, written: c.deps.Clock.Now()}
	c.recentMu.Unlock()
	return nil
}

// setCondition sets the DisruptionReason condition of a candidate. Only that condition is sent, in a JSON patch
// that tests it is as read (deps.PatchNodeClaimStatus): the other controllers' status writes meanwhile do not make
// it fail, as an optimistic lock on the whole NodeClaim did (50 conflicts in a 700-node drift); a changed
// DisruptionReason does, and the NodeClaim is read again.
func (c *Controller) setCondition(ctx context.Context, nc *karpv1.NodeClaim, r Record) error {
	return c.patchConditions(ctx, nc, func(o *karpv1.NodeClaim) bool {
		if cond := o.GetCondition(karpv1.ConditionTypeDisruptionReason); cond != nil && cond.Status == metav1.ConditionTrue {
			return false
		}
		o.SetCondition(karpv1.ConditionTypeDisruptionReason, "True", string(r.Reason), r.Message)
		return true
	})
}

// patchConditions applies change to the NodeClaim's status, sending only the DisruptionReason condition (the one
// this controller writes) with a test that it is as last read, and re-reading the NodeClaim when the test fails;
// change says whether there is anything to write. nc's conditions are updated with what was written.
func (c *Controller) patchConditions(ctx context.Context, nc *karpv1.NodeClaim, change func(*karpv1.NodeClaim) bool) error {
	cur := nc.DeepCopy()
	reread := false
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if reread {
			// From the API server when there is a reader for it: under load the cache lagged behind other
			// controllers' writes for longer than the retries last.
			var r client.Reader = c.deps.Client
			if c.deps.APIReader != nil {
				r = c.deps.APIReader
			}
			cur = &karpv1.NodeClaim{}
			if err := r.Get(ctx, client.ObjectKeyFromObject(nc), cur); err != nil {
				return err
			}
		}
		reread = true
		want := cur.DeepCopy()
		if !change(want) {
			nc.Status.Conditions = cur.Status.Conditions
			return nil
		}
		deps.KeepOnlyConditions(cur, want, karpv1.ConditionTypeDisruptionReason)
		if err := deps.PatchNodeClaimStatus(ctx, c.deps.Client, cur, want); err != nil {
			return err
		}
		nc.Status.Conditions = want.Status.Conditions
		return nil
	})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("patching the conditions of nodeclaim %s: %w", nc.Name, err)
	}
	return nil
}

// clearCandidate undoes markCandidate and the taint, for a NodeClaim that is not being deleted.
func (c *Controller) clearCandidate(ctx context.Context, st *state, nc *karpv1.NodeClaim) error {
	if !nc.DeletionTimestamp.IsZero() {
		return nil
	}
	c.recentMu.Lock()
	delete(c.recent, nc.Name)
	c.recentMu.Unlock()
	if _, ok := nc.Annotations[CommandAnnotationKey]; ok {
		patch := client.MergeFrom(nc.DeepCopy())
		delete(nc.Annotations, CommandAnnotationKey)
		if err := c.deps.Client.Patch(ctx, nc, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("clearing disruption record of nodeclaim %s: %w", nc.Name, err)
		}
	}
	if nc.GetCondition(karpv1.ConditionTypeDisruptionReason) != nil {
		if err := c.patchConditions(ctx, nc, func(o *karpv1.NodeClaim) bool {
			if o.GetCondition(karpv1.ConditionTypeDisruptionReason) == nil {
				return false
			}
			o.ClearCondition(karpv1.ConditionTypeDisruptionReason)
			return true
		}); err != nil {
			return err
		}
	}
	return c.untaint(ctx, st.Nodes[nc.Status.NodeName])
}

// untaintOrphans removes the disrupted taint from nodes whose NodeClaim is neither being deleted nor part of a
// command: left by a pass that stopped between tainting and recording, or by an abandoned command.
func (c *Controller) untaintOrphans(ctx context.Context, st *state) error {
	var errs []error
	for i := range st.Claims {
		nc := &st.Claims[i]
		node := st.Nodes[nc.Status.NodeName]
		if nc.Status.NodeName == "" || node == nil || !nc.DeletionTimestamp.IsZero() || !node.DeletionTimestamp.IsZero() ||
			nc.Annotations[CommandAnnotationKey] != "" {
			continue
		}
		if err := c.untaint(ctx, node); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// liftHolds removes the replacement hold (ReplacementHoldTaintKey) from the Nodes of replacements
// whose command is over, or draining: left by a command abandoned or shrunk, by a lift that failed, or by a
// replacement that registered after its command had drained.
func (c *Controller) liftHolds(ctx context.Context, st *state) error {
	waiting := map[string]bool{}
	for _, cmd := range st.inProgress {
		if len(cmd.Draining) == 0 && len(cmd.Candidates) == cmd.total() {
			waiting[cmd.Record.ID] = true
		}
	}
	var held []*corev1.Node
	for i := range st.Claims {
		nc := &st.Claims[i]
		node := st.Nodes[nc.Status.NodeName]
		if nc.Status.NodeName == "" || node == nil || !node.DeletionTimestamp.IsZero() || !hasHoldTaint(node) ||
			waiting[nc.Annotations[ReplacementForAnnotationKey]] {
			continue
		}
		held = append(held, node)
	}
	return errors.Join(c.forEach(ctx, len(held), func(i int) error { return c.liftHold(ctx, held[i]) })...)
}

func hasHoldTaint(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == ReplacementHoldTaintKey })
}

// liftHold removes a replacement's hold from its Node.
func (c *Controller) liftHold(ctx context.Context, node *corev1.Node) error {
	return c.updateTaints(ctx, node, func(n *corev1.Node) bool {
		if !hasHoldTaint(n) {
			return false
		}
		n.Spec.Taints = slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool { return t.Key == ReplacementHoldTaintKey })
		return true
	})
}

func hasDisruptedTaint(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey })
}

// taint puts the disrupted taint on a candidate's Node so that nothing new lands there.
func (c *Controller) taint(ctx context.Context, node *corev1.Node) error {
	if node == nil || hasDisruptedTaint(node) {
		return nil
	}
	return c.updateTaints(ctx, node, func(n *corev1.Node) bool {
		if hasDisruptedTaint(n) {
			return false
		}
		n.Spec.Taints = append(n.Spec.Taints, karpv1.DisruptedNoScheduleTaint())
		return true
	})
}

func (c *Controller) untaint(ctx context.Context, node *corev1.Node) error {
	if node == nil || !hasDisruptedTaint(node) {
		return nil
	}
	return c.updateTaints(ctx, node, func(n *corev1.Node) bool {
		if !hasDisruptedTaint(n) {
			return false
		}
		n.Spec.Taints = slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey })
		return true
	})
}

// updateTaints changes a Node's taints so that no other writer's change is lost, in one request when it can: a
// JSON patch that sets the taints changed from the cached Node's only if the live Node's spec is still the cached
// one (a kubelet heartbeat changes its status, not its spec, so the pass's stale copy does not fail it). Otherwise
// on the live object: read from the API server (not the pass's cache), changed, and written with its
// resourceVersion; a conflict re-reads and retries. A Node that is gone needs nothing.
func (c *Controller) updateTaints(ctx context.Context, cached *corev1.Node, change func(*corev1.Node) bool) error {
	name := cached.Name
	if want := cached.DeepCopy(); change(want) {
		patch, err := json.Marshal([]map[string]any{
			{"op": "test", "path": "/spec", "value": cached.Spec},
			{"op": "add", "path": "/spec/taints", "value": want.Spec.Taints},
		})
		if err != nil {
			return fmt.Errorf("changing the taints of node %s: %w", name, err)
		}
		err = c.deps.Client.Patch(ctx, want, client.RawPatch(types.JSONPatchType, patch))
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		// The spec changed since the pass read it (or the patch was refused): read it again below.
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if c.deps.KubeClient == nil {
			// Without a clientset (tests of the decision only): the cache, with an optimistic lock.
			n := &corev1.Node{}
			if err := c.deps.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
				return err
			}
			base := n.DeepCopy()
			if !change(n) {
				return nil
			}
			return c.deps.Client.Patch(ctx, n, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		}
		nodes := c.deps.KubeClient.CoreV1().Nodes()
		n, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !change(n) {
			return nil
		}
		_, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("changing the taints of node %s: %w", name, err)
	}
	return nil
}

func candidateNames(cs []*core.Candidate) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.NodeClaim)
	}
	return out
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// replacementName returns a name for a new replacement in the NodePool, as NodeClaims are named (the NodePool's
// name and 5 random characters), that no NodeClaim the pass knows of has and the pass gave out to no other:
// among the ~1,300 NodeClaims of the 600-node drift benchmark two names came out the same now and then (about one
// run in 15), and the command whose replacement's name was taken waited 10 minutes for a replacement it could
// not create.
func (st *state) replacementName(nodePool string) string {
	if st.named == nil {
		st.named = map[string]bool{}
	}
	for {
		name := nodePool + "-" + utilrand.String(5)
		if st.claim(name) == nil && !st.named[name] {
			st.named[name] = true
			return name
		}
	}
}

// takenName returns the name of a replacement the command has yet to create that a NodeClaim of another command,
// or of none, has already, or "".
func takenName(st *state, cmd *InProgress) string {
	for _, l := range cmd.Record.Launch {
		if nc := st.claim(l.Name); nc != nil && nc.Annotations[ReplacementForAnnotationKey] != cmd.Record.ID {
			return l.Name
		}
	}
	return ""
}
