package scheduling

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail/dovetail/pkg/dra"
)

// finish checks and cleans the plan of a solve with claims. The solver counted each claim shape on its own, which
// is exact for a node whose claim pods share one shape; a node that mixes shapes may have counted the same devices
// twice, so its pods' claims are allocated together for real: a new node keeps the instance types where they all
// fit, and pods that fit nowhere on their node wait for the next pass. The pseudo-resources leave the plan, and
// reasons name the claims instead.
func (p *draPass) finish(plan *Plan) error {
	if p == nil {
		return nil
	}
	for _, nc := range plan.NodeClaims {
		for name := range nc.Requests {
			if strings.HasPrefix(string(name), draResourcePrefix) {
				delete(nc.Requests, name)
			}
		}
		if p.shapesOf(nc.Pods) > 1 {
			if err := p.checkNodeClaim(nc); err != nil {
				return err
			}
		}
	}
	if err := p.checkPlacements(plan); err != nil {
		return err
	}
	for i := range plan.Unschedulable {
		pe := &plan.Unschedulable[i]
		if need := p.podNeed[pe.Pod]; need != nil && strings.Contains(pe.Reason, draResourcePrefix) {
			pe.Reason = strings.ReplaceAll(pe.Reason, string(need.shape.dim), "devices for resource claims "+need.shape.names)
		}
	}
	for key, why := range p.failed {
		plan.Unschedulable = append(plan.Unschedulable, PodError{Pod: key, Reason: why, Code: ReasonResources})
	}
	sort.Slice(plan.Unschedulable, func(i, j int) bool { return lessKey(plan.Unschedulable[i].Pod, plan.Unschedulable[j].Pod) })
	return nil
}

func (p *draPass) shapesOf(pods []types.NamespacedName) int {
	seen := map[*draShape]bool{}
	for _, k := range pods {
		if need := p.podNeed[k]; need != nil {
			seen[need.shape] = true
		}
	}
	return len(seen)
}

// allocateAll allocates the pods' claims one pod after another on node and returns the pods whose claims fit.
func (p *draPass) allocateAll(node *dra.Node, pods []types.NamespacedName) (fit []types.NamespacedName, err error) {
	for _, k := range pods {
		need := p.podNeed[k]
		if need == nil {
			fit = append(fit, k)
			continue
		}
		_, ok, err := node.Allocate(p.ctx, need.claims)
		if err != nil {
			return nil, fmt.Errorf("allocating the claims of pod %s: %w", k, err)
		}
		if ok {
			fit = append(fit, k)
		}
	}
	return fit, nil
}

// checkNodeClaim keeps the instance type options on which all the NodeClaim's claims fit together.
func (p *draPass) checkNodeClaim(nc *NodeClaimPlan) error {
	keep := func(pods []types.NamespacedName) ([]InstanceTypeOption, error) {
		var out []InstanceTypeOption
		for _, o := range nc.InstanceTypeOptions {
			fit, err := p.allocateAll(p.typeNode(o.Name), pods)
			if err != nil {
				return nil, err
			}
			if len(fit) == len(pods) {
				out = append(out, o)
			}
		}
		return out, nil
	}
	opts, err := keep(nc.Pods)
	if err != nil {
		return err
	}
	if len(opts) == 0 && len(nc.InstanceTypeOptions) > 0 {
		fit, err := p.allocateAll(p.typeNode(nc.InstanceTypeOptions[0].Name), nc.Pods)
		if err != nil {
			return err
		}
		kept := map[types.NamespacedName]bool{}
		for _, k := range fit {
			kept[k] = true
		}
		for _, k := range nc.Pods {
			if !kept[k] {
				p.failed[k] = fmt.Sprintf("devices for resource claims %s conflict with other claims on the node planned for it; "+
					"it is planned again on the next pass", p.podNeed[k].shape.names)
			}
		}
		nc.Pods = fit
		if opts, err = keep(nc.Pods); err != nil {
			return err
		}
	}
	nc.InstanceTypeOptions = opts
	if len(opts) > 0 {
		nc.InstanceType, nc.Zone, nc.CapacityType, nc.Price = opts[0].Name, opts[0].Zone, opts[0].CapacityType, opts[0].Price
	}
	return nil
}

// checkPlacements allocates, on each existing node that received claim pods of several shapes, their claims
// together; pods whose claims no longer fit leave the placements.
func (p *draPass) checkPlacements(plan *Plan) error {
	byNode := map[string][]types.NamespacedName{}
	for _, pl := range plan.Placements {
		byNode[pl.Node] = append(byNode[pl.Node], pl.Pod)
	}
	drop := map[types.NamespacedName]bool{}
	for name, pods := range byNode {
		node := p.nodes[name]
		if node == nil || p.shapesOf(pods) < 2 {
			continue
		}
		fit, err := p.allocateAll(node.Clone(), pods)
		if err != nil {
			return err
		}
		kept := map[types.NamespacedName]bool{}
		for _, k := range fit {
			kept[k] = true
		}
		for _, k := range pods {
			if !kept[k] {
				drop[k] = true
				p.failed[k] = fmt.Sprintf("devices for resource claims %s conflict with other claims placed on node %s; "+
					"it is planned again on the next pass", p.podNeed[k].shape.names, name)
			}
		}
	}
	if len(drop) > 0 {
		out := plan.Placements[:0]
		for _, pl := range plan.Placements {
			if !drop[pl.Pod] {
				out = append(out, pl)
			}
		}
		plan.Placements = out
	}
	return nil
}
