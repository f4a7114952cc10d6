package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/cli/simulate"
	ctrldisruption "github.com/dovetail/dovetail/pkg/controllers/disruption"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/interruption"
	"github.com/dovetail/dovetail/pkg/scheduling"
	"github.com/dovetail/dovetail/pkg/termination"
)

// NodeReport is the output of `explain node`: what Dovetail knows about a node and what keeps it.
type NodeReport struct {
	Node         string `json:"node"`
	NodePool     string `json:"nodePool,omitempty"`
	NodeClaim    string `json:"nodeClaim,omitempty"`
	InstanceType string `json:"instanceType,omitempty"`
	Zone         string `json:"zone,omitempty"`
	CapacityType string `json:"capacityType,omitempty"`
	// CapacityReservation is the capacity reservation the node runs in (reserved capacity only): its id,
	// type and whether it is interruptible, from the node's labels.
	CapacityReservation *NodeReservation  `json:"capacityReservation,omitempty"`
	Taints              []string          `json:"taints,omitempty"`
	Conditions          []string          `json:"conditions,omitempty"`
	Requests            map[string]string `json:"requests"`
	Allocatable         map[string]string `json:"allocatable"`
	// Disruption are the NodePool's disruption settings.
	Disruption string `json:"disruption,omitempty"`
	// Blockers are what keeps the node from voluntary disruption (consolidation, drift, expiry).
	Blockers []string `json:"blockers"`
	// PricePerHour is the hourly price of the node's offering in the instance types used (PriceSource); absent
	// when they do not list it, and then consolidation can only delete the node, never replace it.
	PricePerHour *float64 `json:"pricePerHour,omitempty"`
	PriceSource  string   `json:"priceSource,omitempty"`
	// Overlays are the NodeOverlays that changed the price or capacity of the node's offering.
	Overlays []string `json:"nodeOverlays,omitempty"`
	// Decision is what the disruption controller would decide about the node now.
	Decision *NodeDecision `json:"decision"`
	// Repair is what node repair would do about the node (FEATURE_GATES NodeRepair).
	Repair *RepairReport `json:"repair,omitempty"`
	// CommandInProgress is the disruption command the node's NodeClaim already carries, if any.
	CommandInProgress *CommandInProgress `json:"commandInProgress,omitempty"`
	// Warnings are what may make the decision differ from the controller's (NodePools left out, unknown prices,
	// an unreadable command record).
	Warnings []string `json:"warnings,omitempty"`
}

// RunNode explains one node of the cluster c reads, writing the report to w. It only reads: c is a client.Client
// because the disruption controller's snapshot code, which it reuses, takes one.
func RunNode(ctx context.Context, c client.Client, o *Options, name string, w io.Writer) error {
	ctx = ctxOr(ctx)
	if err := o.validate(); err != nil {
		return err
	}
	s, err := o.controllerSettings()
	if err != nil {
		return err
	}
	opts := ctrldisruption.DecisionOptions(s)
	var node corev1.Node
	if err := c.Get(ctx, types.NamespacedName{Name: name}, &node); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("node %s not found", name)
		}
		return fmt.Errorf("reading node %s: %w", name, err)
	}
	v, err := ctrldisruption.Observe(ctx, c, o.now())
	if err != nil {
		return err
	}
	var classes awsv1.EC2NodeClassList
	if err := c.List(ctx, &classes); err != nil {
		return fmt.Errorf("listing ec2nodeclasses: %w", err)
	}
	var nc *karpv1.NodeClaim
	for i := range v.Claims {
		x := &v.Claims[i]
		if x.Status.NodeName == node.Name || (x.Status.ProviderID != "" && x.Status.ProviderID == node.Spec.ProviderID) {
			nc = x
			break
		}
	}
	var onNode []*corev1.Pod
	for _, p := range v.Pods {
		if p.Spec.NodeName == node.Name && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			onNode = append(onNode, p)
		}
	}
	var pool *karpv1.NodePool
	for _, np := range v.AllNodePools {
		if pn := node.Labels[karpv1.NodePoolLabelKey]; pn != "" && np.Name == pn {
			pool = np
			break
		}
	}
	r := nodeReport(&node, nc, pool, onNode, v.PodDisruptionBudgets, o.now())
	its, source, warnings, err := o.poolInstanceTypes(ctx, c, v, classes.Items)
	if err != nil {
		return err
	}
	r.Warnings = warnings
	ptrs := make([]*awsv1.EC2NodeClass, 0, len(classes.Items))
	for i := range classes.Items {
		ptrs = append(ptrs, &classes.Items[i])
	}
	r.Warnings = append(r.Warnings, nodeClassNotes(v.AllNodePools, ptrs)...)
	if nc != nil {
		if cmd, ok, err := ctrldisruption.RecordOf(nc); err != nil {
			r.Warnings = append(r.Warnings, err.Error()+" (the controller drops an unreadable record on its next pass)")
		} else if ok {
			r.CommandInProgress = &cmd
		}
		if pn := nc.NodePoolName(); v.NodePools[pn] != nil {
			it, zone, ct := node.Labels[corev1.LabelInstanceTypeStable], node.Labels[corev1.LabelTopologyZone], node.Labels[karpv1.CapacityTypeLabelKey]
			r.PriceSource = source
			r.Overlays = overlayNotes(its[pn], it, zone, ct)
			if p := disruption.OfferingPrice(its[pn], it, zone, ct); p > 0 {
				r.PricePerHour = &p
			} else {
				r.Warnings = append(r.Warnings, fmt.Sprintf("the price of %s in %s (%s) is unknown to %s: consolidation can only delete this node, never replace it with a cheaper one",
					orDash(it), orDash(zone), orDash(ct), source))
			}
		}
	}
	if r.Decision, err = decideNode(ctx, c, v, &node, nc, its, opts); err != nil {
		return err
	}
	if r.Repair, err = repairReport(s, v, &node, nc, o.now()); err != nil {
		return err
	}
	if o.Output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return r.writeTable(w)
}

// poolInstanceTypes returns the instance types of every NodePool not being deleted, as explain pod gets them
// (--from-aws, --instance-types or the built-in catalog), where they come from, and warnings for the NodePools
// the controller would not launch replacements from.
func (o *Options) poolInstanceTypes(ctx context.Context, c client.Reader, v *ctrldisruption.View, classes []awsv1.EC2NodeClass) (instanceTypes, string, []string, error) {
	var pools []*karpv1.NodePool
	var warnings []string
	for _, np := range v.AllNodePools {
		if v.NodePools[np.Name] == nil {
			continue
		}
		pools = append(pools, np)
		if reason := simulate.NotProvisioning(np); reason != "" {
			warnings = append(warnings, fmt.Sprintf("NodePool %s launches no replacements: %s", np.Name, reason))
		}
	}
	sort.Slice(pools, func(i, j int) bool { return pools[i].Name < pools[j].Name })
	if o.FromAWS {
		its, skipped, err := awsInstanceTypes(ctx, c, o.ClusterName, pools)
		if err != nil {
			return nil, "", nil, err
		}
		if warnings, err = applyClusterOverlays(ctx, c, pools, its, warnings); err != nil {
			return nil, "", nil, err
		}
		if warnings, err = o.applyUnavailable(ctx, c, its, warnings); err != nil {
			return nil, "", nil, err
		}
		return its, "AWS (--from-aws)", append(warnings, skipped...), nil
	}
	var nodeClasses []*awsv1.EC2NodeClass
	for i := range classes {
		nodeClasses = append(nodeClasses, &classes[i])
	}
	its, err := simulate.InstanceTypes(o.Region, o.InstanceTypesFile, pools, nodeClasses)
	if err != nil {
		return nil, "", nil, err
	}
	if warnings, err = applyClusterOverlays(ctx, c, pools, its, warnings); err != nil {
		return nil, "", nil, err
	}
	if warnings, err = o.applyUnavailable(ctx, c, its, warnings); err != nil {
		return nil, "", nil, err
	}
	source := "the built-in catalog for " + o.Region
	if o.InstanceTypesFile != "" {
		source = o.InstanceTypesFile
	}
	return its, source, warnings, nil
}

// nodeReport assembles the report from what the cluster holds.
func nodeReport(node *corev1.Node, nc *karpv1.NodeClaim, pool *karpv1.NodePool, pods []*corev1.Pod, pdbs []*policyv1.PodDisruptionBudget, now time.Time) *NodeReport {
	r := &NodeReport{Node: node.Name, NodePool: node.Labels[karpv1.NodePoolLabelKey], InstanceType: node.Labels[corev1.LabelInstanceTypeStable],
		Zone: node.Labels[corev1.LabelTopologyZone], CapacityType: node.Labels[karpv1.CapacityTypeLabelKey],
		Requests: map[string]string{}, Allocatable: map[string]string{}, Blockers: []string{}}
	if id := node.Labels[awsv1.LabelCapacityReservationID]; id != "" {
		r.CapacityReservation = &NodeReservation{ID: id, Type: node.Labels[awsv1.LabelCapacityReservationType],
			Interruptible: node.Labels[awsv1.LabelCapacityReservationInterruptible] == "true"}
	}
	for _, t := range node.Spec.Taints {
		r.Taints = append(r.Taints, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
	}
	req := corev1.ResourceList{}
	for _, p := range pods {
		for n, q := range scheduling.PodRequests(p) {
			sum := req[n]
			sum.Add(q)
			req[n] = sum
		}
	}
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
		a := node.Status.Allocatable[n]
		r.Allocatable[string(n)] = a.String()
		if n == corev1.ResourcePods {
			r.Requests[string(n)] = resource.NewQuantity(int64(len(pods)), resource.DecimalSI).String()
			continue
		}
		q := req[n]
		r.Requests[string(n)] = q.String()
	}
	if r.NodePool == "" {
		r.Blockers = append(r.Blockers, "not managed by Dovetail (no "+karpv1.NodePoolLabelKey+" label)")
	}
	if node.Annotations[karpv1.DoNotDisruptAnnotationKey] == karpv1.DoNotDisruptValue {
		r.Blockers = append(r.Blockers, "node annotation "+karpv1.DoNotDisruptAnnotationKey+"=true")
	}
	if nc != nil {
		r.NodeClaim = nc.Name
		conds := append([]metav1.Condition(nil), nc.Status.Conditions...)
		sort.Slice(conds, func(i, j int) bool { return conds[i].Type < conds[j].Type })
		for _, cd := range conds {
			s := fmt.Sprintf("%s=%s", cd.Type, cd.Status)
			if cd.Reason != "" {
				s += " (" + cd.Reason
				if cd.Message != "" {
					s += ": " + cd.Message
				}
				s += ")"
			}
			r.Conditions = append(r.Conditions, s)
		}
		if !nc.IsTrue(karpv1.ConditionTypeInitialized) {
			r.Blockers = append(r.Blockers, "NodeClaim "+nc.Name+" is not initialized yet")
		}
		if nc.Annotations[karpv1.DoNotDisruptAnnotationKey] == karpv1.DoNotDisruptValue {
			r.Blockers = append(r.Blockers, "NodeClaim annotation "+karpv1.DoNotDisruptAnnotationKey+"=true")
		}
		if !nc.DeletionTimestamp.IsZero() {
			why := ""
			if reason := nc.Annotations[interruption.InstanceUnhealthyAnnotation]; reason != "" {
				why = ", replaced for an unhealthy instance: " + reason
			}
			r.Blockers = append(r.Blockers, "none: NodeClaim "+nc.Name+" is being deleted (draining"+why+")")
		}
	} else if r.NodePool != "" {
		r.Blockers = append(r.Blockers, "no NodeClaim found for the node")
	}
	if pool != nil {
		d := pool.Spec.Disruption
		r.Disruption = fmt.Sprintf("consolidationPolicy %s, consolidateAfter %s", d.ConsolidationPolicy, d.ConsolidateAfter.String())
		var budgets []string
		for _, b := range d.Budgets {
			s := "nodes " + b.Nodes
			if len(b.Reasons) > 0 {
				var rs []string
				for _, x := range b.Reasons {
					rs = append(rs, string(x))
				}
				s += " for " + strings.Join(rs, ",")
			}
			if b.Schedule != nil {
				s += " at " + *b.Schedule
			}
			budgets = append(budgets, s)
			if (b.Nodes == "0" || b.Nodes == "0%") && b.Schedule == nil && len(b.Reasons) == 0 {
				r.Blockers = append(r.Blockers, "NodePool "+pool.Name+" has a budget of 0 nodes")
			}
		}
		if len(budgets) > 0 {
			r.Disruption += ", budgets: " + strings.Join(budgets, "; ")
		}
		if d.ConsolidateAfter.IsNever() && !d.ConsolidateAfter.IsZero() {
			r.Blockers = append(r.Blockers, "NodePool "+pool.Name+" has consolidateAfter Never")
		}
		if d.ConsolidationPolicy == karpv1.ConsolidationPolicyWhenEmpty && countMovable(pods) > 0 {
			r.Blockers = append(r.Blockers, fmt.Sprintf("NodePool %s consolidates only empty nodes (WhenEmpty) and the node runs %d pods", pool.Name, countMovable(pods)))
		}
	} else if r.NodePool != "" {
		r.Blockers = append(r.Blockers, "NodePool "+r.NodePool+" not found")
	}
	for _, p := range pods {
		if isDaemonOrMirror(p) {
			continue
		}
		if d := termination.PodDoNotDisrupt(p, now); d.Active {
			r.Blockers = append(r.Blockers, "pod "+p.Namespace+"/"+p.Name+" has "+d.Describe())
		} else if d.Invalid != "" {
			r.Blockers = append(r.Blockers, "none from pod "+p.Namespace+"/"+p.Name+": its "+karpv1.DoNotDisruptAnnotationKey+" is ignored ("+d.Invalid+")")
		}
		for _, b := range pdbs {
			if b.Namespace != p.Namespace || b.Status.DisruptionsAllowed > 0 {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
			if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			r.Blockers = append(r.Blockers, fmt.Sprintf("pod %s/%s is protected by PodDisruptionBudget %s (0 disruptions allowed)", p.Namespace, p.Name, b.Name))
		}
	}
	return r
}

func countMovable(pods []*corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if !isDaemonOrMirror(p) {
			n++
		}
	}
	return n
}

func isDaemonOrMirror(p *corev1.Pod) bool {
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return true
	}
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

func (r *NodeReport) writeTable(w io.Writer) error {
	l := &lineWriter{w: w}
	for _, warning := range r.Warnings {
		l.printf("warning: %s\n", warning)
	}
	l.printf("Node %s\n", r.Node)
	l.printf("  nodepool: %s  nodeclaim: %s\n", orDash(r.NodePool), orDash(r.NodeClaim))
	l.printf("  instance type: %s  zone: %s  capacity type: %s\n", orDash(r.InstanceType), orDash(r.Zone), orDash(r.CapacityType))
	if cr := r.CapacityReservation; cr != nil {
		l.printf("  capacity reservation: %s  type: %s  interruptible: %t\n", cr.ID, orDash(cr.Type), cr.Interruptible)
	}
	switch {
	case r.PricePerHour != nil:
		l.printf("  price: $%.4f/h (%s)\n", *r.PricePerHour, r.PriceSource)
	case r.PriceSource != "":
		l.printf("  price: unknown to %s: consolidation can only delete the node\n", r.PriceSource)
	}
	for _, n := range r.Overlays {
		l.printf("  %s\n", n)
	}
	l.printf("  requests/allocatable: cpu %s/%s, memory %s/%s, pods %s/%s\n", r.Requests["cpu"], r.Allocatable["cpu"],
		r.Requests["memory"], r.Allocatable["memory"], r.Requests["pods"], r.Allocatable["pods"])
	if len(r.Taints) > 0 {
		l.printf("  taints: %s\n", strings.Join(r.Taints, ", "))
	}
	if r.Disruption != "" {
		l.printf("  disruption: %s\n", r.Disruption)
	}
	if len(r.Conditions) > 0 {
		l.printf("  conditions:\n")
		for _, c := range r.Conditions {
			l.printf("    %s\n", c)
		}
	}
	if r.Repair != nil {
		l.printf("Node repair: %s\n", r.Repair.line())
	}
	if d := r.Decision; d != nil {
		l.printf("Disruption decision: %s\n", d.summary())
	}
	if c := r.CommandInProgress; c != nil {
		kind := strings.ToLower(string(c.Reason)) + "/" + c.Decision
		if c.ConsolidationType != "" {
			kind += " (" + c.ConsolidationType + ")"
		}
		l.printf("Disruption command in progress: %s: %s, %d replacement(s), started %s: %s\n", c.ID, kind, c.Replacements,
			c.Started.UTC().Format(time.RFC3339), orDash(c.Message))
		if c.Plan != "" {
			l.printf("  part of whole-cluster consolidation plan %s\n", c.Plan)
		}
	} else {
		l.printf("Disruption command in progress: none\n")
	}
	if len(r.Blockers) == 0 {
		msg := "Nothing that blocks every disruption method (do-not-disrupt, a PodDisruptionBudget, the NodePool's policy) applies"
		if r.Decision != nil && r.Decision.Outcome == OutcomeStay {
			msg += "; it stays this pass for the reason above"
		}
		l.printf("%s.\n", msg)
		return l.err
	}
	l.printf("Why it stays:\n")
	for _, b := range r.Blockers {
		l.printf("  - %s\n", b)
	}
	return l.err
}

// summary is the decision in one line.
func (d *NodeDecision) summary() string {
	switch d.Outcome {
	case OutcomeDisrupt:
		return "would be disrupted now: " + d.Message
	case OutcomeInProgress:
		return fmt.Sprintf("being disrupted [%s]: %s", d.Reason, d.Message)
	case OutcomeNotCandidate:
		return "not a candidate: " + d.Message
	default:
		return fmt.Sprintf("stays [%s]: %s", d.Reason, d.Message)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// NodeReservation is the capacity reservation a node runs in.
type NodeReservation struct {
	ID            string `json:"id"`
	Type          string `json:"type,omitempty"`
	Interruptible bool   `json:"interruptible"`
}
