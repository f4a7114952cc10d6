package simulate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail/dovetail/pkg/scheduling"
)

// report is what simulate prints, as a table or as JSON.
type report struct {
	Pods              int             `json:"pods"`
	NewNodes          []nodeGroup     `json:"newNodes"`
	NodeClaims        []nodeClaimOut  `json:"nodeClaims"`
	HourlyCost        float64         `json:"hourlyCost"`
	LowerBound        float64         `json:"lowerBound"`
	Ratio             float64         `json:"ratio"`
	OnExistingNodes   []placementOut  `json:"onExistingNodes"`
	Unschedulable     []unschedulable `json:"unschedulable"`
	SchedulingSeconds float64         `json:"schedulingSeconds"`
	BoundSeconds      float64         `json:"boundSeconds"`
	// SkippedNodePools are the cluster's NodePools left out (--from-cluster only).
	SkippedNodePools []SkippedNodePool `json:"skippedNodePools,omitempty"`
	// NodeOverlays are the NodeOverlays of the input that were not applied.
	NodeOverlays []NotAppliedOverlay `json:"nodeOverlaysNotApplied,omitempty"`
	plan         *scheduling.Plan    `json:"-"`
}

type nodeGroup struct {
	InstanceType string  `json:"instanceType"`
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	NodePool     string  `json:"nodePool"`
	Count        int     `json:"count"`
	Pods         int     `json:"pods"`
	HourlyCost   float64 `json:"hourlyCost"`
}

type nodeClaimOut struct {
	Name                string   `json:"name"`
	NodePool            string   `json:"nodePool"`
	InstanceType        string   `json:"instanceType"`
	Zone                string   `json:"zone"`
	CapacityType        string   `json:"capacityType"`
	Price               float64  `json:"price"`
	InstanceTypeOptions []string `json:"instanceTypeOptions"`
	Pods                []string `json:"pods"`
}

type placementOut struct {
	Pod  string `json:"pod"`
	Node string `json:"node"`
}

type unschedulable struct {
	Pod    string `json:"pod"`
	Reason string `json:"reason"`
	// Claims says, per NodePool, which of the pod's resource claims removed which instance types and why.
	Claims []string `json:"claims,omitempty"`
}

func newReport(snap *scheduling.Snapshot, plan *scheduling.Plan) *report {
	r := &report{Pods: len(snap.Pods), HourlyCost: plan.Cost, LowerBound: plan.LowerBound, Ratio: plan.Ratio,
		SchedulingSeconds: plan.Duration.Seconds(), BoundSeconds: plan.BoundDuration.Seconds(), plan: plan, NewNodes: []nodeGroup{}, NodeClaims: []nodeClaimOut{},
		OnExistingNodes: []placementOut{}, Unschedulable: []unschedulable{}}
	groups := map[[4]string]*nodeGroup{}
	for _, nc := range plan.NodeClaims {
		k := [4]string{nc.NodePool, nc.InstanceType, nc.Zone, nc.CapacityType}
		g, ok := groups[k]
		if !ok {
			g = &nodeGroup{NodePool: nc.NodePool, InstanceType: nc.InstanceType, Zone: nc.Zone, CapacityType: nc.CapacityType}
			groups[k] = g
		}
		g.Count++
		g.Pods += len(nc.Pods)
		g.HourlyCost += nc.Price
		out := nodeClaimOut{Name: nc.Name, NodePool: nc.NodePool, InstanceType: nc.InstanceType, Zone: nc.Zone,
			CapacityType: nc.CapacityType, Price: nc.Price, Pods: []string{}, InstanceTypeOptions: []string{}}
		for _, o := range nc.InstanceTypeOptions {
			out.InstanceTypeOptions = append(out.InstanceTypeOptions, o.Name)
		}
		for _, p := range nc.Pods {
			out.Pods = append(out.Pods, p.String())
		}
		r.NodeClaims = append(r.NodeClaims, out)
	}
	for _, g := range groups {
		r.NewNodes = append(r.NewNodes, *g)
	}
	sort.Slice(r.NewNodes, func(i, j int) bool {
		a, b := r.NewNodes[i], r.NewNodes[j]
		if a.HourlyCost != b.HourlyCost {
			return a.HourlyCost > b.HourlyCost
		}
		return fmt.Sprint(a) < fmt.Sprint(b)
	})
	for _, p := range plan.Placements {
		r.OnExistingNodes = append(r.OnExistingNodes, placementOut{Pod: p.Pod.String(), Node: p.Node})
	}
	for _, u := range plan.Unschedulable {
		r.Unschedulable = append(r.Unschedulable, unschedulable{Pod: u.Pod.String(), Reason: u.Reason})
	}
	return r
}

func (r *report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func (r *report) writeTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "NEW NODES\n")
	fmt.Fprintf(tw, "NODEPOOL\tINSTANCE TYPE\tZONE\tCAPACITY TYPE\tNODES\tPODS\t$/HOUR\n")
	nodes, pods := 0, 0
	for _, g := range r.NewNodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%.4f\n", g.NodePool, g.InstanceType, g.Zone, g.CapacityType, g.Count, g.Pods, g.HourlyCost)
		nodes += g.Count
		pods += g.Pods
	}
	fmt.Fprintf(tw, "total\t\t\t\t%d\t%d\t%.4f\n", nodes, pods, r.HourlyCost)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nHourly cost:        $%.4f\n", r.HourlyCost)
	fmt.Fprintf(w, "LP lower bound:     $%.4f (cost/bound %.3f)\n", r.LowerBound, r.Ratio)
	fmt.Fprintf(w, "On existing nodes:  %d pods\n", len(r.OnExistingNodes))
	for _, p := range r.OnExistingNodes {
		fmt.Fprintf(w, "  %s -> %s\n", p.Pod, p.Node)
	}
	fmt.Fprintf(w, "Unschedulable:      %d pods\n", len(r.Unschedulable))
	for _, u := range r.Unschedulable {
		fmt.Fprintf(w, "  %s: %s\n", u.Pod, u.Reason)
		for _, c := range u.Claims {
			fmt.Fprintf(w, "    %s\n", c)
		}
	}
	if len(r.SkippedNodePools) > 0 {
		fmt.Fprintf(w, "Skipped NodePools:  %d\n", len(r.SkippedNodePools))
		for _, p := range r.SkippedNodePools {
			fmt.Fprintf(w, "  %s: %s\n", p.NodePool, p.Reason)
		}
	}
	if len(r.NodeOverlays) > 0 {
		fmt.Fprintf(w, "NodeOverlays not applied: %d\n", len(r.NodeOverlays))
		for _, o := range r.NodeOverlays {
			fmt.Fprintf(w, "  %s: %s: %s\n", o.NodeOverlay, o.Reason, o.Message)
		}
	}
	fmt.Fprintf(w, "Scheduling step:    %s for %d pods (lower bound: %s more)\n", time.Duration(r.SchedulingSeconds*float64(time.Second)).Round(time.Microsecond), r.Pods,
		time.Duration(r.BoundSeconds*float64(time.Second)).Round(time.Microsecond))
	return nil
}

// explainClaims adds, to each unschedulable pod with resource claims, the ResourceClaims stage of each NodePool:
// which claim removed which instance types and why. Pods with the same claims and reason share one analysis.
func (r *report) explainClaims(ctx context.Context, snap *scheduling.Snapshot) error {
	if snap.DRA == nil {
		return nil
	}
	pods := map[string]*corev1.Pod{}
	for _, p := range snap.Pods {
		if len(p.Spec.ResourceClaims) > 0 {
			pods[p.Namespace+"/"+p.Name] = p
		}
	}
	done := map[string][]string{}
	for i := range r.Unschedulable {
		u := &r.Unschedulable[i]
		p := pods[u.Pod]
		if p == nil {
			continue
		}
		key := u.Reason + "\x00" + claimsKey(p)
		lines, ok := done[key]
		if !ok {
			stages, err := scheduling.ExplainClaims(ctx, snap, types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, scheduling.Options{})
			if err != nil {
				return fmt.Errorf("explaining the claims of pod %s: %w", u.Pod, err)
			}
			names := make([]string, 0, len(stages))
			for n := range stages {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				st := stages[n]
				lines = append(lines, fmt.Sprintf("NodePool %s: %d of %d instance types left: %s", n, st.After, st.Before, st.Detail))
			}
			done[key] = lines
		}
		u.Claims = lines
	}
	return nil
}

// claimsKey identifies a pod's claims by the names it gives them and their sources.
func claimsKey(p *corev1.Pod) string {
	var b strings.Builder
	for _, c := range p.Spec.ResourceClaims {
		b.WriteString(c.Name)
		if c.ResourceClaimName != nil {
			b.WriteString("=claim/" + *c.ResourceClaimName)
		}
		if c.ResourceClaimTemplateName != nil {
			b.WriteString("=template/" + *c.ResourceClaimTemplateName)
		}
		b.WriteString(";")
	}
	return b.String()
}
