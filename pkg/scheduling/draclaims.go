package scheduling

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
)

// claimResolver finds the claims a pod's spec.resourceClaims stand for.
type claimResolver struct {
	claims       map[string]*resourcev1.ResourceClaim
	templates    map[string]*resourcev1.ResourceClaimTemplate
	slicesByNode map[string][]*resourcev1.ResourceSlice
	// firstUser is, for each unallocated claim that several pending pods name, the pod that plans it.
	firstUser map[string]types.NamespacedName
	// released are the claims generated for bound pods that the solve moves (a disruption simulation): the pod's
	// replacement gets a new claim from the template, so their devices count as free.
	released map[string]bool
}

func newClaimResolver(d *DRA, snap *Snapshot) *claimResolver {
	r := &claimResolver{claims: map[string]*resourcev1.ResourceClaim{}, templates: map[string]*resourcev1.ResourceClaimTemplate{},
		slicesByNode: map[string][]*resourcev1.ResourceSlice{}, firstUser: map[string]types.NamespacedName{}, released: map[string]bool{}}
	for _, c := range d.Claims {
		if c != nil {
			r.claims[c.Namespace+"/"+c.Name] = c
		}
	}
	for _, t := range d.ClaimTemplates {
		if t != nil {
			r.templates[t.Namespace+"/"+t.Name] = t
		}
	}
	var everywhere []*resourcev1.ResourceSlice
	for _, s := range d.Slices {
		switch {
		case s == nil:
		case s.Spec.NodeName != nil:
			r.slicesByNode[*s.Spec.NodeName] = append(r.slicesByNode[*s.Spec.NodeName], s)
		case s.Spec.AllNodes != nil && *s.Spec.AllNodes:
			everywhere = append(everywhere, s)
		}
	}
	if len(everywhere) > 0 {
		for _, n := range snap.Nodes {
			if n != nil {
				r.slicesByNode[n.Name] = append(r.slicesByNode[n.Name], everywhere...)
			}
		}
	}
	users := map[string][]types.NamespacedName{}
	for _, p := range snap.Pods {
		if p == nil {
			continue
		}
		if p.Spec.NodeName != "" {
			for _, st := range p.Status.ResourceClaimStatuses {
				if st.ResourceClaimName != nil && fromTemplate(p, st.Name) {
					r.released[p.Namespace+"/"+*st.ResourceClaimName] = true
				}
			}
		}
		for _, pc := range p.Spec.ResourceClaims {
			if pc.ResourceClaimName != nil {
				key := p.Namespace + "/" + *pc.ResourceClaimName
				users[key] = append(users[key], types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
			}
		}
	}
	for key, us := range users {
		sort.Slice(us, func(i, j int) bool { return lessKey(us[i], us[j]) })
		r.firstUser[key] = us[0]
	}
	return r
}

// resolve returns the claims the pod still needs allocated, how the pod names them, the node its allocated claims
// pin it to (empty: none), and why the pod cannot be planned now (empty: it can).
func (r *claimResolver) resolve(p *corev1.Pod) (need []*resourcev1.ResourceClaim, names []string, pin, why string) {
	self := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	generated := map[string]string{}
	for _, st := range p.Status.ResourceClaimStatuses {
		if st.ResourceClaimName != nil {
			generated[st.Name] = *st.ResourceClaimName
		}
	}
	for _, pc := range p.Spec.ResourceClaims {
		var c *resourcev1.ResourceClaim
		switch {
		case pc.ResourceClaimName != nil:
			key := p.Namespace + "/" + *pc.ResourceClaimName
			c = r.claims[key]
			if c == nil {
				return nil, nil, "", fmt.Sprintf("resource claim %s (pod claim %s) does not exist", *pc.ResourceClaimName, pc.Name)
			}
			names = append(names, fmt.Sprintf("%s (ResourceClaim %s)", pc.Name, *pc.ResourceClaimName))
			if c.Status.Allocation == nil && r.firstUser[key] != self {
				return nil, nil, "", fmt.Sprintf("resource claim %s is shared with pod %s, which is planned first; this pod follows "+
					"it once the claim is allocated", *pc.ResourceClaimName, r.firstUser[key])
			}
		case pc.ResourceClaimTemplateName != nil:
			names = append(names, fmt.Sprintf("%s (ResourceClaimTemplate %s)", pc.Name, *pc.ResourceClaimTemplateName))
			if g, ok := generated[pc.Name]; ok && !r.released[p.Namespace+"/"+g] {
				c = r.claims[p.Namespace+"/"+g]
			}
			if c == nil {
				t := r.templates[p.Namespace+"/"+*pc.ResourceClaimTemplateName]
				if t == nil {
					return nil, nil, "", fmt.Sprintf("resource claim template %s (pod claim %s) does not exist", *pc.ResourceClaimTemplateName, pc.Name)
				}
				c = &resourcev1.ResourceClaim{}
				c.Namespace, c.Name = p.Namespace, p.Name+"-"+pc.Name
				c.UID = types.UID(string(p.UID) + "-" + pc.Name)
				c.Spec = *t.Spec.Spec.DeepCopy()
			}
		default:
			continue
		}
		if a := c.Status.Allocation; a != nil {
			node := allocationNode(a.NodeSelector)
			if node != "" && pin != "" && node != pin {
				return nil, nil, "", fmt.Sprintf("resource claims %s are allocated on two nodes, %s and %s", pc.Name, pin, node)
			}
			if node != "" {
				pin = node
			}
			continue
		}
		need = append(need, c)
	}
	return need, names, pin, ""
}

// allocationNode returns the node an allocation's node selector names (by metadata.name or hostname), if one.
func allocationNode(sel *corev1.NodeSelector) string {
	if sel == nil {
		return ""
	}
	for _, t := range sel.NodeSelectorTerms {
		for _, f := range t.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
		for _, e := range t.MatchExpressions {
			if e.Key == corev1.LabelHostname && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 {
				return e.Values[0]
			}
		}
	}
	return ""
}

// fromTemplate reports whether the pod claim named podClaim comes from a ResourceClaimTemplate.
func fromTemplate(p *corev1.Pod, podClaim string) bool {
	for _, pc := range p.Spec.ResourceClaims {
		if pc.Name == podClaim {
			return pc.ResourceClaimTemplateName != nil
		}
	}
	return false
}

// Rescheduled returns a copy of a bound pod as the pod that takes its place once it is evicted: unbound, and
// without the claims generated for it from ResourceClaimTemplates, since its replacement gets new ones, allocated
// where it lands. Claims the pod names (spec.resourceClaims[].resourceClaimName) stay: they outlive the pod, and
// an allocated one keeps the pod on the node that holds its devices.
//
// The copy is shallow: it shares the pod's labels, annotations, containers and every other map and slice, which
// its users (snapshots for Solve, which changes nothing it is given) only read. A decision on 50,000 pods deep
// copied each of them for its whole-cluster plan: 140 MB allocated a decision, most of its garbage.
func Rescheduled(p *corev1.Pod) *corev1.Pod {
	out := *p
	out.Spec.NodeName = ""
	if len(p.Status.ResourceClaimStatuses) > 0 {
		var kept []corev1.PodResourceClaimStatus // a new slice: the pod's own is left as it is
		for _, st := range p.Status.ResourceClaimStatuses {
			if !fromTemplate(p, st.Name) {
				kept = append(kept, st)
			}
		}
		out.Status.ResourceClaimStatuses = kept
	}
	return &out
}
