package scheduling

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// StageResourceClaims is the NodePool analysis stage that removes the instance types whose devices cannot satisfy
// the pod's resource claims.
const StageResourceClaims = "ResourceClaims"

// claimExplain is what Explain knows of the pod's resource claims.
type claimExplain struct {
	pass *draPass
	// why is set when the pod's claims cannot be planned at all (a missing template, a claim shared with a pod
	// planned first).
	why string
	// need is the pod's claims; dim the pseudo-resource of its shape (empty: nothing left to allocate).
	need *podClaims
	dim  corev1.ResourceName
}

// explainClaims prepares the pod-alone snapshot of Explain for the pod's resource claims: the instance types and
// nodes offer its claim shape's pseudo-resource, and the pod requests it, without the instance-type restriction a
// solve adds (the ResourceClaims stage shows that instead). It returns the snapshot unchanged, and nil, for a pod
// without claims or a snapshot without DRA state.
func explainClaims(ctx context.Context, alone *Snapshot, pod *corev1.Pod) (*Snapshot, *claimExplain, error) {
	if alone.DRA == nil || len(pod.Spec.ResourceClaims) == 0 {
		return alone, nil, nil
	}
	prepared, pass, err := prepareDRA(ctx, alone)
	if err != nil {
		return nil, nil, err
	}
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	ce := &claimExplain{pass: pass}
	if why, ok := pass.failed[key]; ok && pass.podNeed[key] == nil {
		ce.why = why
		out := *prepared
		out.Pods = []*corev1.Pod{pod}
		return &out, ce, nil
	}
	need := pass.podNeed[key]
	out := *prepared
	if need == nil {
		// Every claim is allocated: the pod is pinned to the node that holds them (prepareDRA did that).
		return &out, ce, nil
	}
	ce.need, ce.dim = need, need.shape.dim
	cp := pod.DeepCopy()
	cp.Spec.Overhead = pod.Spec.Overhead.DeepCopy()
	if cp.Spec.Overhead == nil {
		cp.Spec.Overhead = corev1.ResourceList{}
	}
	cp.Spec.Overhead[ce.dim] = *resource.NewQuantity(1, resource.DecimalSI)
	out.Pods = []*corev1.Pod{cp}
	return &out, ce, nil
}

// offers says whether a new node of the instance type holds the pod's claims.
func (ce *claimExplain) offers(it *itInfo) bool {
	q, ok := it.it.Capacity[ce.dim]
	return ok && q.Value() >= 1
}

// removedWhy groups the removed instance types by the first part of the pod's claims their devices cannot
// satisfy: "claim gpu (ResourceClaimTemplate one-h100), request gpu (deviceClass gpu.nvidia.com, selector ...): no
// matching device on 812 types (e.g. m5.large, ...)".
func (ce *claimExplain) removedWhy(removed []*itInfo) string {
	type group struct {
		why   string
		count int
		names []string
	}
	byWhy := map[string]*group{}
	for _, t := range removed {
		why := ce.typeWhy(t.name)
		g := byWhy[why]
		if g == nil {
			g = &group{why: why}
			byWhy[why] = g
		}
		g.count++
		if len(g.names) < 3 {
			g.names = append(g.names, t.name)
		}
	}
	groups := make([]*group, 0, len(byWhy))
	for _, g := range byWhy {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool {
		if groups[i].count != groups[j].count {
			return groups[i].count > groups[j].count
		}
		return groups[i].why < groups[j].why
	})
	parts := make([]string, 0, len(groups))
	for _, g := range groups {
		parts = append(parts, fmt.Sprintf("%s on %s (e.g. %s)", g.why, pluralTypes(g.count), strings.Join(g.names, ", ")))
	}
	return strings.Join(parts, "; ")
}

func pluralTypes(n int) string {
	if n == 1 {
		return "1 type"
	}
	return fmt.Sprintf("%d types", n)
}

// typeWhy says which of the pod's claims a new node of the instance type cannot satisfy: the first request no
// device of the type matches, else the first claim whose requests do not fit together, else that the claims
// together need more devices than the type has.
func (ce *claimExplain) typeWhy(instanceType string) string {
	p := ce.pass
	claims := ce.need.claims
	names := strings.Split(ce.need.shape.names, ", ")
	claimName := func(i int) string {
		if i < len(names) {
			return "claim " + names[i]
		}
		return "claim " + claims[i].Name
	}
	fits := func(c *resourcev1.ResourceClaim) bool {
		k, err := p.typeNode(instanceType).Fit(p.ctx, []*resourcev1.ResourceClaim{c}, 1)
		return err == nil && k > 0
	}
	if p.typeNode(instanceType).Empty() {
		return fmt.Sprintf("%s, %s: no devices", claimName(0), describeRequest(claims[0].Spec.Devices.Requests, 0))
	}
	for i, c := range claims {
		for j := range c.Spec.Devices.Requests {
			one := c.DeepCopy()
			one.Spec.Devices.Requests = []resourcev1.DeviceRequest{c.Spec.Devices.Requests[j]}
			one.Spec.Devices.Constraints = nil
			one.Spec.Devices.Config = nil
			if !fits(one) {
				short := "no matching device"
				if e := c.Spec.Devices.Requests[j].Exactly; e != nil && e.AllocationMode != resourcev1.DeviceAllocationModeAll && e.Count > 1 {
					short = fmt.Sprintf("fewer than %d matching devices", e.Count)
				}
				return fmt.Sprintf("%s, %s: %s", claimName(i), describeRequest(c.Spec.Devices.Requests, j), short)
			}
		}
		if !fits(c) {
			return fmt.Sprintf("%s: its requests do not fit together (counts or constraints)", claimName(i))
		}
	}
	return "the claims together need more devices than the type has"
}

// describeRequest describes request j: its name, device class, selectors and count, or its alternatives.
func describeRequest(reqs []resourcev1.DeviceRequest, j int) string {
	if j >= len(reqs) {
		return "no request"
	}
	r := reqs[j]
	switch {
	case r.Exactly != nil:
		return fmt.Sprintf("request %s (%s)", r.Name, describeExact(r.Exactly.DeviceClassName, r.Exactly.Selectors, r.Exactly.AllocationMode, r.Exactly.Count))
	case len(r.FirstAvailable) > 0:
		alts := make([]string, 0, len(r.FirstAvailable))
		for _, s := range r.FirstAvailable {
			alts = append(alts, s.Name+": "+describeExact(s.DeviceClassName, s.Selectors, s.AllocationMode, s.Count))
		}
		return fmt.Sprintf("request %s (first available of %s)", r.Name, strings.Join(alts, " | "))
	}
	return "request " + r.Name
}

func describeExact(class string, selectors []resourcev1.DeviceSelector, mode resourcev1.DeviceAllocationMode, count int64) string {
	parts := []string{"deviceClass " + class}
	for _, s := range selectors {
		if s.CEL != nil {
			parts = append(parts, "selector "+s.CEL.Expression)
		}
	}
	switch {
	case mode == resourcev1.DeviceAllocationModeAll:
		parts = append(parts, "all devices")
	case count > 1:
		parts = append(parts, fmt.Sprintf("count %d", count))
	}
	return strings.Join(parts, ", ")
}

// rename replaces the pseudo-resource of the pod's claim shape in a text by what it stands for.
func (ce *claimExplain) rename(s string) string {
	if ce == nil || ce.need == nil || !strings.Contains(s, string(ce.dim)) {
		return s
	}
	return strings.ReplaceAll(s, string(ce.dim), "devices for resource claims "+ce.need.shape.names)
}
