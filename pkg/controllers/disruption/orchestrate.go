package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	core "github.com/dovetail/dovetail/pkg/disruption"
)

// start carries out a new command in an order that a restart can resume at any step: record the command on
// every candidate, taint their Nodes, launch the replacements (each pointing back at the command); with no
// replacements, delete the candidates at once.
func (c *Controller) start(ctx context.Context, st *state, cmd *core.Command) error {
	logger := log.FromContext(ctx)
	claims := map[string]*karpv1.NodeClaim{}
	for i := range st.Claims {
		claims[st.Claims[i].Name] = &st.Claims[i]
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
	}
	raw, err := r.encode()
	if err != nil {
		return err
	}
	logger.Info("disrupting", "command", r.ID, "reason", r.Reason, "decision", r.Decision, "consolidation-type", r.ConsolidationType,
		"nodeclaims", candidateNames(cmd.Candidates), "replacements", len(cmd.Replacements), "savings-per-hour", cmd.Savings)
	c.deps.Metrics.DisruptionDecisions.WithLabelValues(r.Decision, strings.ToLower(string(r.Reason)), r.ConsolidationType).Inc()

	var candidates []*karpv1.NodeClaim
	for _, cand := range cmd.Candidates {
		nc := claims[cand.NodeClaim]
		if nc == nil {
			return fmt.Errorf("candidate nodeclaim %s is gone from the cache", cand.NodeClaim)
		}
		if err := c.markCandidate(ctx, nc, raw, r); err != nil {
			return err
		}
		candidates = append(candidates, nc)
	}
	for _, nc := range candidates {
		if err := c.taint(ctx, st, nc); err != nil {
			return err
		}
	}
	if len(cmd.Replacements) == 0 {
		return c.terminate(ctx, &InProgress{Record: r, Candidates: candidates})
	}
	var names []string
	for _, plan := range cmd.Replacements {
		np := st.NodePools[plan.NodePool]
		if np == nil {
			return c.abort(ctx, st, &InProgress{Record: r, Candidates: candidates}, fmt.Sprintf("nodepool %s of the replacement is gone", plan.NodePool))
		}
		nn := solver.NewNodeClaim{NodePool: np, Requests: plan.Requests}
		for _, req := range plan.Requirements {
			nn.Requirements = append(nn.Requirements, karpv1.NodeSelectorRequirementWithMinValues{
				NodeSelectorRequirement: req.NodeSelectorRequirement, MinValues: req.MinValues})
		}
		nc := provisioning.BuildNodeClaim(nn)
		nc.Annotations[ReplacementForAnnotationKey] = r.ID
		if err := c.deps.Client.Create(ctx, nc); err != nil {
			// The command stays recorded: the next pass sees fewer replacements than launched and abandons it
			// after a short grace.
			return fmt.Errorf("creating replacement nodeclaim for command %s: %w", r.ID, err)
		}
		names = append(names, nc.Name)
		c.deps.Metrics.NodeClaimsCreated.WithLabelValues(strings.ToLower(string(r.Reason)), np.Name).Inc()
	}
	for _, nc := range candidates {
		c.deps.Recorder.Eventf(nc, corev1.EventTypeNormal, ReasonDisruptionLaunching,
			"Launching %s for %s: %s", plural(len(names), "replacement"), strings.ToLower(string(r.Reason)), strings.Join(names, ", "))
	}
	logger.Info("launched replacements", "command", r.ID, "replacements", names)
	return nil
}

// resume moves a command in progress on: delete the candidates once every replacement is initialized, abandon
// the command when a replacement is lost or does not initialize in time, otherwise wait.
func (c *Controller) resume(ctx context.Context, st *state, cmd *InProgress) error {
	r := cmd.Record
	age := st.Now.Sub(r.Started)
	var waiting []string
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
		if !nc.IsTrue(karpv1.ConditionTypeInitialized) {
			waiting = append(waiting, nc.Name+" ("+notInitialized(nc)+")")
		}
	}
	switch {
	case len(cmd.Replacements) < r.Replacements && age > missingReplacementGrace:
		return c.abort(ctx, st, cmd, fmt.Sprintf("only %d of %d replacement nodeclaims exist", len(cmd.Replacements), r.Replacements))
	case len(cmd.Replacements) < r.Replacements:
		return nil
	case len(waiting) == 0:
		return c.terminate(ctx, cmd)
	case age > ReplacementTimeout:
		return c.abort(ctx, st, cmd, fmt.Sprintf("replacements not initialized within %s: %s", ReplacementTimeout, strings.Join(waiting, ", ")))
	}
	log.FromContext(ctx).V(1).Info("waiting for replacements", "command", r.ID, "waiting", waiting)
	return nil
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

// terminate deletes the candidates; the termination controllers drain them within their grace periods.
func (c *Controller) terminate(ctx context.Context, cmd *InProgress) error {
	r := cmd.Record
	var errs []error
	for _, nc := range cmd.Candidates {
		c.deps.Recorder.Eventf(nc, corev1.EventTypeNormal, ReasonDisruptionTerminating, "Disrupting: %s", r.Message)
		if err := c.deps.Client.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err))
			continue
		}
		c.deps.Metrics.NodeClaimsDisrupted.WithLabelValues(strings.ToLower(string(r.Reason)), nc.NodePoolName(),
			nc.Labels[karpv1.CapacityTypeLabelKey]).Inc()
		log.FromContext(ctx).Info("deleted disrupted nodeclaim", "command", r.ID, "nodeclaim", nc.Name, "node", nc.Status.NodeName, "reason", r.Reason)
	}
	return errors.Join(errs...)
}

// abort abandons a command: the candidates lose their record, condition and taint and stay in service.
// Replacements already launched stay too; consolidation removes them later if they are not needed.
func (c *Controller) abort(ctx context.Context, st *state, cmd *InProgress, why string) error {
	r := cmd.Record
	log.FromContext(ctx).Info("abandoning disruption", "command", r.ID, "why", why)
	c.deps.Metrics.DisruptionQueueFailures.WithLabelValues(r.Decision, strings.ToLower(string(r.Reason)), r.ConsolidationType).Inc()
	var errs []error
	for _, nc := range cmd.Candidates {
		c.deps.Recorder.Eventf(nc, corev1.EventTypeWarning, ReasonDisruptionAborted, "Disruption abandoned (%s): %s", r.Message, why)
		if err := c.clearCandidate(ctx, st, nc); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// markCandidate records the command on a candidate: the annotation first (what a restart resumes from), then
// the DisruptionReason condition users see.
func (c *Controller) markCandidate(ctx context.Context, nc *karpv1.NodeClaim, raw string, r Record) error {
	patch := client.MergeFromWithOptions(nc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[CommandAnnotationKey] = raw
	if err := c.deps.Client.Patch(ctx, nc, patch); err != nil {
		return fmt.Errorf("recording disruption on nodeclaim %s: %w", nc.Name, err)
	}
	status := client.MergeFrom(nc.DeepCopy())
	nc.SetCondition(karpv1.ConditionTypeDisruptionReason, "True", string(r.Reason), r.Message)
	if err := c.deps.Client.Status().Patch(ctx, nc, status); err != nil {
		return fmt.Errorf("setting condition %s on nodeclaim %s: %w", karpv1.ConditionTypeDisruptionReason, nc.Name, err)
	}
	return nil
}

// clearCandidate undoes markCandidate and the taint, for a NodeClaim that is not being deleted.
func (c *Controller) clearCandidate(ctx context.Context, st *state, nc *karpv1.NodeClaim) error {
	if !nc.DeletionTimestamp.IsZero() {
		return nil
	}
	if _, ok := nc.Annotations[CommandAnnotationKey]; ok {
		patch := client.MergeFrom(nc.DeepCopy())
		delete(nc.Annotations, CommandAnnotationKey)
		if err := c.deps.Client.Patch(ctx, nc, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("clearing disruption record of nodeclaim %s: %w", nc.Name, err)
		}
	}
	if nc.GetCondition(karpv1.ConditionTypeDisruptionReason) != nil {
		status := client.MergeFrom(nc.DeepCopy())
		nc.ClearCondition(karpv1.ConditionTypeDisruptionReason)
		if err := c.deps.Client.Status().Patch(ctx, nc, status); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("clearing condition %s of nodeclaim %s: %w", karpv1.ConditionTypeDisruptionReason, nc.Name, err)
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

func hasDisruptedTaint(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey })
}

// taint puts the disrupted taint on a candidate's Node so that nothing new lands there.
func (c *Controller) taint(ctx context.Context, st *state, nc *karpv1.NodeClaim) error {
	node := st.Nodes[nc.Status.NodeName]
	if node == nil || hasDisruptedTaint(node) {
		return nil
	}
	patch := client.MergeFromWithOptions(node.DeepCopy(), client.MergeFromWithOptimisticLock{})
	node.Spec.Taints = append(node.Spec.Taints, karpv1.DisruptedNoScheduleTaint())
	if err := c.deps.Client.Patch(ctx, node, patch); err != nil {
		return fmt.Errorf("tainting node %s: %w", node.Name, err)
	}
	return nil
}

func (c *Controller) untaint(ctx context.Context, node *corev1.Node) error {
	if node == nil || !hasDisruptedTaint(node) {
		return nil
	}
	patch := client.MergeFromWithOptions(node.DeepCopy(), client.MergeFromWithOptimisticLock{})
	node.Spec.Taints = slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey })
	if err := c.deps.Client.Patch(ctx, node, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("untainting node %s: %w", node.Name, err)
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
