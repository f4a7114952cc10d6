package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	ctrldisruption "github.com/dovetail/dovetail/pkg/controllers/disruption"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver/adapter"
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
}

// CommandInProgress is the disruption command a NodeClaim carries in its dovetail.sh/disruption-command
// annotation, as the disruption controller writes it (pkg/controllers/disruption/command.go).
type CommandInProgress struct {
	ID                string    `json:"id"`
	Reason            string    `json:"reason"`
	Decision          string    `json:"decision"`
	ConsolidationType string    `json:"consolidationType,omitempty"`
	Replacements      int       `json:"replacements"`
	Started           time.Time `json:"started"`
	Message           string    `json:"message,omitempty"`
}

// decodeCommand reads a NodeClaim's command annotation; ok is false when it has none.
func decodeCommand(nc *karpv1.NodeClaim) (cmd *CommandInProgress, ok bool, err error) {
	raw, ok := nc.Annotations[ctrldisruption.CommandAnnotationKey]
	if !ok {
		return nil, false, nil
	}
	cmd = &CommandInProgress{}
	if err := json.Unmarshal([]byte(raw), cmd); err != nil {
		return nil, true, fmt.Errorf("NodeClaim %s: annotation %s: %w", nc.Name, ctrldisruption.CommandAnnotationKey, err)
	}
	if cmd.ID == "" {
		return nil, true, fmt.Errorf("NodeClaim %s: annotation %s has no id", nc.Name, ctrldisruption.CommandAnnotationKey)
	}
	return cmd, true, nil
}

// clusterView is what one disruption pass reads, listed as the controller lists it.
type clusterView struct {
	now time.Time
	// claims are sorted by name.
	claims []karpv1.NodeClaim
	nodes  map[string]*corev1.Node
	pods   []corev1.Pod
	// pools are the NodePools not being deleted; allPools every NodePool.
	pools    map[string]*karpv1.NodePool
	allPools []*karpv1.NodePool
	pdbs     []*policyv1.PodDisruptionBudget
	classes  []*awsv1.EC2NodeClass
}

// readView lists what a disruption pass reads, plus the EC2NodeClasses the catalog's instance types need.
func readView(ctx context.Context, c client.Reader, now time.Time) (*clusterView, error) {
	var (
		claims  karpv1.NodeClaimList
		nodes   corev1.NodeList
		pods    corev1.PodList
		pools   karpv1.NodePoolList
		pdbs    policyv1.PodDisruptionBudgetList
		classes awsv1.EC2NodeClassList
	)
	for _, l := range []struct {
		what string
		list client.ObjectList
	}{{"nodeclaims", &claims}, {"nodes", &nodes}, {"pods", &pods}, {"nodepools", &pools}, {"poddisruptionbudgets", &pdbs},
		{"ec2nodeclasses", &classes}} {
		if err := c.List(ctx, l.list); err != nil {
			return nil, fmt.Errorf("listing %s: %w", l.what, err)
		}
	}
	v := &clusterView{now: now, claims: claims.Items, nodes: map[string]*corev1.Node{}, pods: pods.Items, pools: map[string]*karpv1.NodePool{}}
	sort.Slice(v.claims, func(i, j int) bool { return v.claims[i].Name < v.claims[j].Name })
	for i := range nodes.Items {
		v.nodes[nodes.Items[i].Name] = &nodes.Items[i]
	}
	for i := range pools.Items {
		np := &pools.Items[i]
		v.allPools = append(v.allPools, np)
		if np.DeletionTimestamp.IsZero() {
			v.pools[np.Name] = np
		}
	}
	for i := range pdbs.Items {
		v.pdbs = append(v.pdbs, &pdbs.Items[i])
	}
	for i := range classes.Items {
		v.classes = append(v.classes, &classes.Items[i])
	}
	return v, nil
}

// decisionOptions are the decision's options from the controller settings the command was given
// (--feature-gates, --preference-policy, --min-values-policy), validated by the controller's own parser.
func (o *Options) decisionOptions() (disruption.Options, error) {
	args := []string{"--cluster-name", "dovetailctl-explain"}
	for _, f := range []struct{ flag, value string }{{"feature-gates", o.FeatureGates}, {"preference-policy", o.PreferencePolicy},
		{"min-values-policy", o.MinValuesPolicy}} {
		if f.value != "" {
			args = append(args, "--"+f.flag, f.value)
		}
	}
	s, err := settings.Parse(args, func(string) string { return "" })
	if err != nil {
		return disruption.Options{}, fmt.Errorf("controller settings: %w", err)
	}
	return disruption.Options{
		SpotToSpotConsolidation: s.FeatureEnabled(settings.FeatureSpotToSpotConsolidation),
		Scheduling:              adapter.New(s).Options,
	}, nil
}

// decideNode says what the disruption controller would decide about node now. nc is the node's NodeClaim (nil
// when none launched it).
func decideNode(ctx context.Context, c client.Client, v *clusterView, node *corev1.Node, nc *karpv1.NodeClaim,
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
	if d := inProgress(v, nc); d != nil {
		return d, nil
	}
	// The controller's code logs through the context; the CLI reports instead.
	if _, err := logr.FromContext(ctx); err != nil {
		ctx = logr.NewContext(ctx, logr.Discard())
	}
	snap, err := disruptionSnapshot(ctx, c, v, types)
	if err != nil {
		return nil, err
	}
	res, err := disruption.Decide(ctx, snap, opts)
	if err != nil {
		return nil, fmt.Errorf("deciding: %w", err)
	}
	return outcomeOf(res, nc.Name)
}

// inProgress returns the decision when disruption commands are in progress (the controller then carries them
// out and decides nothing new), or nil. As the controller, it ignores NodeClaims being deleted and unreadable
// records (which the controller drops).
func inProgress(v *clusterView, nc *karpv1.NodeClaim) *NodeDecision {
	byID := map[string]*CommandInProgress{}
	nodes := map[string][]string{}
	var ids []string
	for i := range v.claims {
		x := &v.claims[i]
		if !x.DeletionTimestamp.IsZero() {
			continue
		}
		cmd, ok, err := decodeCommand(x)
		if !ok || err != nil {
			continue
		}
		if x.Name == nc.Name {
			return &NodeDecision{Outcome: OutcomeInProgress, Reason: cmd.Reason,
				Message: fmt.Sprintf("disruption command %s, started %s, is being carried out: %s", cmd.ID, cmd.Started.UTC().Format(time.RFC3339), cmd.Message)}
		}
		if byID[cmd.ID] == nil {
			byID[cmd.ID] = cmd
			ids = append(ids, cmd.ID)
		}
		nodes[cmd.ID] = append(nodes[cmd.ID], x.Name)
	}
	if len(ids) == 0 {
		return nil
	}
	sort.Strings(ids)
	var parts []string
	for _, id := range ids {
		parts = append(parts, fmt.Sprintf("%s on nodeclaim(s) %s (%s)", id, strings.Join(nodes[id], ", "), byID[id].Message))
	}
	return &NodeDecision{Outcome: OutcomeStay, Reason: string(disruption.StayBusy),
		Message: fmt.Sprintf("disruption command %s is in progress: the controller carries it out before deciding anything new", strings.Join(parts, "; "))}
}

// disruptionSnapshot builds the decision's input as the disruption controller does (pkg/controllers/disruption,
// snapshot.go): one candidate per NodeClaim with a registered Node, the cluster as the provisioner sees it
// (provisioning.ClusterInput and adapter.Snapshot, with types as the cloud provider), budgets' counts, pending
// pods, and whether the cluster is busy.
func disruptionSnapshot(ctx context.Context, c client.Client, v *clusterView, types instanceTypes) (*disruption.Snapshot, error) {
	bound := map[string][]*corev1.Pod{}
	var pending []*corev1.Pod
	for i := range v.pods {
		p := &v.pods[i]
		if provisioning.IsProvisionable(p) {
			pending = append(pending, p)
		}
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		bound[p.Spec.NodeName] = append(bound[p.Spec.NodeName], p)
	}
	snap := &disruption.Snapshot{
		Now:                  v.now,
		NodePools:            v.pools,
		PodDisruptionBudgets: v.pdbs,
		Disrupting:           map[string]int{},
		NodeCounts:           map[string]int{},
		Pending:              pending,
	}
	var launching []string
	var moving []*corev1.Pod
	for i := range v.claims {
		nc := &v.claims[i]
		pool := nc.NodePoolName()
		if pool == "" {
			continue
		}
		snap.NodeCounts[pool]++
		// A readable record on a NodeClaim not being deleted means a command in progress, and no decision (see
		// inProgress); the controller drops unreadable ones before it counts.
		if !nc.DeletionTimestamp.IsZero() {
			snap.Disrupting[pool]++
		} else if _, ok, err := decodeCommand(nc); ok && err == nil {
			snap.Disrupting[pool]++
		}
		if nc.DeletionTimestamp.IsZero() && !nc.IsTrue(karpv1.ConditionTypeInitialized) {
			launching = append(launching, nc.Name)
		}
		node := v.nodes[nc.Status.NodeName]
		if node == nil || nc.Status.NodeName == "" {
			continue
		}
		var its []*cloudprovider.InstanceType
		if v.pools[pool] != nil {
			its = types[pool]
		}
		snap.Candidates = append(snap.Candidates, disruption.CandidateFrom(nc, node, bound[node.Name], its))
		moving = append(moving, bound[node.Name]...)
	}
	if len(launching) > 0 {
		snap.Busy = fmt.Sprintf("nodeclaim %s is not initialized yet", launching[0])
	}
	d := deps.Deps{Client: newPodsByNode(c, v.pods), CloudProvider: types}
	in, err := provisioning.ClusterInput(ctx, d, nil, v.pods, v.claims, append(moving, pending...))
	if err != nil {
		return nil, fmt.Errorf("gathering the cluster for disruption: %w", err)
	}
	snap.Cluster, _ = adapter.Snapshot(in)
	sort.Slice(snap.Candidates, func(i, j int) bool { return snap.Candidates[i].NodeClaim < snap.Candidates[j].NodeClaim })
	return snap, nil
}

// outcomeOf picks the node's part of a decision: in the command, or why it stays.
func outcomeOf(res *disruption.Result, nodeClaim string) (*NodeDecision, error) {
	if cmd := res.Command; cmd != nil {
		for _, c := range cmd.Candidates {
			if c.NodeClaim != nodeClaim {
				continue
			}
			dc := &DecisionCommand{Reason: string(cmd.Reason), ConsolidationType: cmd.ConsolidationType, Decision: cmd.Decision,
				SavingsPerHour: cmd.Savings}
			for _, x := range cmd.Candidates {
				dc.Nodes = append(dc.Nodes, x.Node)
			}
			for _, r := range cmd.Replacements {
				dc.Replacements = append(dc.Replacements, r.InstanceType+"/"+r.Zone+"/"+r.CapacityType)
			}
			return &NodeDecision{Outcome: OutcomeDisrupt, Reason: string(cmd.Reason), Message: cmd.Message(), Command: dc}, nil
		}
	}
	for _, s := range res.Stays {
		if s.NodeClaim == nodeClaim {
			return &NodeDecision{Outcome: OutcomeStay, Reason: string(s.Reason), Message: s.Message}, nil
		}
	}
	return nil, fmt.Errorf("the decision says nothing about NodeClaim %s", nodeClaim)
}
