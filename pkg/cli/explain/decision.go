package explain

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	ctrldisruption "github.com/dovetail/dovetail/pkg/controllers/disruption"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/settings"
)

// Outcomes of the disruption decision for one node.
const (
	// OutcomeDisrupt: the command the controller would start now takes the node.
	OutcomeDisrupt = "Disrupt"
	// OutcomeStay: the node stays this pass; Reason is a disruption.StayReason.
	OutcomeStay = "Stay"
	// OutcomeInProgress: a disruption command already in progress takes the node.
	OutcomeInProgress = "InProgress"
	// OutcomeNotCandidate: the disruption controller does not consider the node at all.
	OutcomeNotCandidate = "NotACandidate"
)

// NodeDecision is what the disruption controller would decide about a node now: the decision core
// (disruption.Decide) run on the snapshot the controller builds.
type NodeDecision struct {
	// Outcome is Disrupt, Stay, InProgress or NotACandidate.
	Outcome string `json:"outcome"`
	// Reason is the command's disruption reason (Drifted, Empty, Underutilized) for Disrupt and InProgress, and
	// why the node stays for Stay (DoNotDisrupt, PodDisruptionBudget, Budget, ClusterBusy, NotConsolidatable,
	// NoCheaperReplacement, ...; see docs/explain.md).
	Reason string `json:"reason,omitempty"`
	// Message is the command's summary or a sentence saying why the node stays.
	Message string `json:"message"`
	// Command is the command that would take the node now (Disrupt only).
	Command *DecisionCommand `json:"command,omitempty"`
}

// DecisionCommand summarises the disruption command the controller would start.
type DecisionCommand struct {
	// Reason is Drifted, Empty or Underutilized; ConsolidationType is empty, single or multi ("" for drift).
	Reason            string `json:"reason"`
	ConsolidationType string `json:"consolidationType,omitempty"`
	// Decision is delete or replace.
	Decision string `json:"decision"`
	// Nodes are every node the command disrupts.
	Nodes []string `json:"nodes"`
	// Replacements are the new nodes as instance-type/zone/capacity-type.
	Replacements []string `json:"replacements,omitempty"`
	// SavingsPerHour is the candidates' hourly price less the replacements' (negative for some drift).
	SavingsPerHour float64 `json:"savingsPerHour"`
	// Scores are the verdicts of the NodePools with consolidationPolicy Balanced on the move.
	Scores []string `json:"scores,omitempty"`
	// Plan is the id of the whole-cluster plan the command belongs to, if any.
	Plan string `json:"plan,omitempty"`
}

// CommandInProgress is the disruption command a NodeClaim carries in its dovetail.sh/disruption-command
// annotation: the record the disruption controller writes and reads back.
type CommandInProgress = ctrldisruption.Record

// controllerSettings are the controller settings the command was given (--feature-gates, --preference-policy,
// --min-values-policy, --node-repair-tolerations, --aws-feature-gates), validated by the controller's own parser.
func (o *Options) controllerSettings() (*settings.Settings, error) {
	args := []string{"--cluster-name", "dovetailctl-explain"}
	for _, f := range []struct{ flag, value string }{{"feature-gates", o.FeatureGates}, {"preference-policy", o.PreferencePolicy},
		{"min-values-policy", o.MinValuesPolicy}, {"node-repair-tolerations", o.NodeRepairTolerations}, {"aws-feature-gates", o.DRA.AWSFeatureGates}} {
		if f.value != "" {
			args = append(args, "--"+f.flag, f.value)
		}
	}
	s, err := settings.Parse(args, func(string) string { return "" })
	if err != nil {
		return nil, fmt.Errorf("controller settings: %w", err)
	}
	return s, nil
}

// decideNode says what the disruption controller would decide about node now. nc is the node's NodeClaim (nil
// when none launched it). types are the NodePools' instance types the controller's cloud provider would give.
func decideNode(ctx context.Context, c client.Client, v *ctrldisruption.View, node *corev1.Node, nc *karpv1.NodeClaim,
	types instanceTypes, opts disruption.Options) (*NodeDecision, error) {
	notCandidate := func(format string, args ...any) (*NodeDecision, error) {
		return &NodeDecision{Outcome: OutcomeNotCandidate, Message: fmt.Sprintf(format, args...)}, nil
	}
	switch {
	case nc == nil:
		return notCandidate("no NodeClaim launched node %s: the disruption controller considers only the nodes Dovetail launched", node.Name)
	case nc.NodePoolName() == "":
		return notCandidate("NodeClaim %s has no %s label: the disruption controller considers only NodeClaims of a NodePool", nc.Name, karpv1.NodePoolLabelKey)
	case nc.Status.NodeName != node.Name:
		return notCandidate("NodeClaim %s has not recorded node %s as its node yet (status.nodeName %q)", nc.Name, node.Name, nc.Status.NodeName)
	}
	if np := v.NodePools[nc.NodePoolName()]; np != nil && np.IsStatic() {
		return notCandidate("NodePool %s is static (spec.replicas %d): the disruption controller never considers its nodes; the static NodePool controller keeps their count and replaces drifted ones",
			np.Name, *np.Spec.Replicas)
	}
	if d := inProgress(v, nc); d != nil {
		return d, nil
	}
	// The controller's code logs through the context; the CLI reports instead.
	if _, err := logr.FromContext(ctx); err != nil {
		ctx = logr.NewContext(ctx, logr.Discard())
	}
	// The controller's snapshot, with the instance types as its cloud provider and the pods already listed
	// serving its lists of pods by node.
	snap, err := ctrldisruption.BuildSnapshot(ctx, deps.Deps{Client: newPodsByNode(c, v.Pods), CloudProvider: types}, v)
	if err != nil {
		return nil, err
	}
	if len(snap.Candidates) == 0 {
		return nil, fmt.Errorf("node %s is missing from the list of nodes just read: run the command again", node.Name)
	}
	res, err := disruption.Decide(ctx, snap, opts)
	if err != nil {
		return nil, fmt.Errorf("deciding: %w", err)
	}
	return outcomeOf(res, nc.Name)
}

// inProgress returns the decision for a node that a disruption command in progress holds: one of its candidates,
// or one of its replacements (which waits for the candidates' pods), or nil. Other nodes are decided on as the
// controller does while commands are in progress: beside them. As the controller, it ignores NodeClaims being
// deleted and unreadable records (which the controller drops).
func inProgress(v *ctrldisruption.View, nc *karpv1.NodeClaim) *NodeDecision {
	if r, ok, err := ctrldisruption.RecordOf(nc); ok && err == nil && nc.DeletionTimestamp.IsZero() {
		return &NodeDecision{Outcome: OutcomeInProgress, Reason: string(r.Reason),
			Message: fmt.Sprintf("disruption command %s, started %s, is being carried out: %s", r.ID, r.Started.UTC().Format(time.RFC3339), r.Message)}
	}
	for _, cmd := range ctrldisruption.CommandsInProgress(v) {
		for _, x := range cmd.Replacements {
			if x.Name != nc.Name {
				continue
			}
			var names []string
			for _, y := range cmd.Candidates {
				names = append(names, y.Name)
			}
			return &NodeDecision{Outcome: OutcomeStay, Reason: string(disruption.StayBusy),
				Message: fmt.Sprintf("it replaces nodeclaim(s) %s in disruption command %s (%s): their pods are to move here", strings.Join(names, ", "), cmd.Record.ID, cmd.Record.Message)}
		}
	}
	return nil
}

// outcomeOf picks the node's part of a decision: in the command, or why it stays.
func outcomeOf(res *disruption.Result, nodeClaim string) (*NodeDecision, error) {
	cmds := res.Commands
	if len(cmds) == 0 && res.Command != nil {
		cmds = []*disruption.Command{res.Command}
	}
	for _, cmd := range cmds {
		for _, c := range cmd.Candidates {
			if c.NodeClaim != nodeClaim {
				continue
			}
			dc := &DecisionCommand{Reason: string(cmd.Reason), ConsolidationType: cmd.ConsolidationType, Decision: cmd.Decision,
				SavingsPerHour: cmd.Savings, Plan: cmd.Plan}
			for _, x := range cmd.Candidates {
				dc.Nodes = append(dc.Nodes, x.Node)
			}
			for _, r := range cmd.Replacements {
				dc.Replacements = append(dc.Replacements, r.InstanceType+"/"+r.Zone+"/"+r.CapacityType)
			}
			for _, sc := range cmd.Scores {
				dc.Scores = append(dc.Scores, sc.String())
			}
			msg := cmd.Message()
			if cmd.Plan != "" {
				msg += "; part of whole-cluster plan " + cmd.Plan
			}
			if len(dc.Scores) > 0 {
				msg += "; consolidationPolicy Balanced approves: " + strings.Join(dc.Scores, "; ")
			}
			return &NodeDecision{Outcome: OutcomeDisrupt, Reason: string(cmd.Reason), Message: msg, Command: dc}, nil
		}
	}
	for _, s := range res.Stays {
		if s.NodeClaim == nodeClaim {
			return &NodeDecision{Outcome: OutcomeStay, Reason: string(s.Reason), Message: s.Message}, nil
		}
	}
	return nil, fmt.Errorf("the decision says nothing about NodeClaim %s", nodeClaim)
}
