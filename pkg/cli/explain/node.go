package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// NodeReport is the output of `explain node`: what Dovetail knows about a node and what keeps it.
type NodeReport struct {
	Node         string            `json:"node"`
	NodePool     string            `json:"nodePool,omitempty"`
	NodeClaim    string            `json:"nodeClaim,omitempty"`
	InstanceType string            `json:"instanceType,omitempty"`
	Zone         string            `json:"zone,omitempty"`
	CapacityType string            `json:"capacityType,omitempty"`
	Taints       []string          `json:"taints,omitempty"`
	Conditions   []string          `json:"conditions,omitempty"`
	Requests     map[string]string `json:"requests"`
	Allocatable  map[string]string `json:"allocatable"`
	// Disruption are the NodePool's disruption settings.
	Disruption string `json:"disruption,omitempty"`
	// Blockers are what keeps the node from voluntary disruption (consolidation, drift, expiry).
	Blockers []string `json:"blockers"`
}

// RunNode explains one node of the cluster c reads, writing the report to w.
func RunNode(ctx context.Context, c client.Reader, o *Options, name string, w io.Writer) error {
	ctx = ctxOr(ctx)
	if err := o.validate(); err != nil {
		return err
	}
	var node corev1.Node
	if err := c.Get(ctx, types.NamespacedName{Name: name}, &node); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("node %s not found", name)
		}
		return fmt.Errorf("reading node %s: %w", name, err)
	}
	var (
		claims karpv1.NodeClaimList
		pods   corev1.PodList
		pdbs   policyv1.PodDisruptionBudgetList
	)
	if err := c.List(ctx, &claims); err != nil {
		return fmt.Errorf("listing nodeclaims: %w", err)
	}
	if err := c.List(ctx, &pods); err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	if err := c.List(ctx, &pdbs); err != nil {
		return fmt.Errorf("listing poddisruptionbudgets: %w", err)
	}
	var nc *karpv1.NodeClaim
	for i := range claims.Items {
		x := &claims.Items[i]
		if x.Status.NodeName == node.Name || (x.Status.ProviderID != "" && x.Status.ProviderID == node.Spec.ProviderID) {
			nc = x
			break
		}
	}
	var onNode []*corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == node.Name && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			onNode = append(onNode, p)
		}
	}
	var pool *karpv1.NodePool
	if pn := node.Labels[karpv1.NodePoolLabelKey]; pn != "" {
		var np karpv1.NodePool
		if err := c.Get(ctx, types.NamespacedName{Name: pn}, &np); err == nil {
			pool = &np
		} else if !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading nodepool %s: %w", pn, err)
		}
	}
	r := nodeReport(&node, nc, pool, onNode, pdbs.Items)
	if o.Output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	return r.writeTable(w)
}

// nodeReport assembles the report from what the cluster holds.
func nodeReport(node *corev1.Node, nc *karpv1.NodeClaim, pool *karpv1.NodePool, pods []*corev1.Pod, pdbs []policyv1.PodDisruptionBudget) *NodeReport {
	r := &NodeReport{Node: node.Name, NodePool: node.Labels[karpv1.NodePoolLabelKey], InstanceType: node.Labels[corev1.LabelInstanceTypeStable],
		Zone: node.Labels[corev1.LabelTopologyZone], CapacityType: node.Labels[karpv1.CapacityTypeLabelKey],
		Requests: map[string]string{}, Allocatable: map[string]string{}, Blockers: []string{}}
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
			r.Blockers = append(r.Blockers, "none: NodeClaim "+nc.Name+" is being deleted (draining)")
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
		if p.Annotations[karpv1.DoNotDisruptAnnotationKey] == karpv1.DoNotDisruptValue {
			r.Blockers = append(r.Blockers, "pod "+p.Namespace+"/"+p.Name+" has "+karpv1.DoNotDisruptAnnotationKey+"=true")
		}
		for i := range pdbs {
			b := &pdbs[i]
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
	l.printf("Node %s\n", r.Node)
	l.printf("  nodepool: %s  nodeclaim: %s\n", orDash(r.NodePool), orDash(r.NodeClaim))
	l.printf("  instance type: %s  zone: %s  capacity type: %s\n", orDash(r.InstanceType), orDash(r.Zone), orDash(r.CapacityType))
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
	if len(r.Blockers) == 0 {
		l.printf("Nothing Dovetail knows blocks disrupting this node: it stays while consolidation finds no cheaper placement for its pods.\n")
		return l.err
	}
	l.printf("Why it stays:\n")
	for _, b := range r.Blockers {
		l.printf("  - %s\n", b)
	}
	return l.err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
