package oracle

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// topology evaluates PodTopologySpread and InterPodAffinity filters with every other pod in place. Counts are
// computed once per distinct (selector, key, namespaces, node filter) and corrected for the pod under test.
type topology struct {
	c       *checker
	spread  map[string]*counts
	terms   map[string]*counts
	anti    map[string]*antiOwners
	antiAll []*antiOwners
}

type counts struct {
	byDomain map[string]int
	total    int
	domains  int
}

type antiOwners struct {
	term     term
	byDomain map[string]int
}

type term struct {
	key string
	ns  map[string]bool // nil: all
	sel labels.Selector
}

func (t term) matches(p *corev1.Pod) bool {
	if t.ns != nil && !t.ns[p.Namespace] {
		return false
	}
	return t.sel.Matches(labels.Set(p.Labels))
}

func (t term) id() string {
	var ns []string
	for n := range t.ns {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return fmt.Sprintf("%s|%v|%s|%s", t.key, t.ns == nil, strings.Join(ns, ","), t.sel)
}

func affinityTerm(p *corev1.Pod, at corev1.PodAffinityTerm) term {
	sel := selectorOf(at.LabelSelector)
	for _, k := range at.MatchLabelKeys {
		if v, ok := p.Labels[k]; ok {
			r, _ := labels.NewRequirement(k, selection.In, []string{v})
			sel = sel.Add(*r)
		}
	}
	for _, k := range at.MismatchLabelKeys {
		if v, ok := p.Labels[k]; ok {
			r, _ := labels.NewRequirement(k, selection.NotIn, []string{v})
			sel = sel.Add(*r)
		}
	}
	var ns map[string]bool
	if at.NamespaceSelector == nil || len(at.Namespaces) > 0 {
		ns = map[string]bool{}
		for _, n := range at.Namespaces {
			ns[n] = true
		}
		if len(at.Namespaces) == 0 {
			ns[p.Namespace] = true
		}
	}
	return term{key: at.TopologyKey, ns: ns, sel: sel}
}

func newTopology(c *checker) *topology {
	t := &topology{c: c, spread: map[string]*counts{}, terms: map[string]*counts{}, anti: map[string]*antiOwners{}}
	for _, p := range c.pods {
		a := p.p.Spec.Affinity
		if a == nil || a.PodAntiAffinity == nil {
			continue
		}
		seen := map[string]bool{}
		for _, at := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			tm := affinityTerm(p.p, at)
			if seen[tm.id()] {
				continue // a pod repeating a term still counts once
			}
			seen[tm.id()] = true
			o, ok := t.anti[tm.id()]
			if !ok {
				o = &antiOwners{term: tm, byDomain: map[string]int{}}
				t.anti[tm.id()] = o
				t.antiAll = append(t.antiAll, o)
			}
			if v, ok := p.node.labels[tm.key]; ok {
				o.byDomain[v]++
			}
		}
	}
	return t
}

func (t *topology) termCounts(tm term) *counts {
	if c, ok := t.terms[tm.id()]; ok {
		return c
	}
	c := &counts{byDomain: map[string]int{}}
	for _, n := range t.c.nodes {
		v, ok := n.labels[tm.key]
		if !ok {
			continue
		}
		for _, q := range n.pods {
			if tm.matches(q.p) {
				c.byDomain[v]++
				c.total++
			}
		}
	}
	t.terms[tm.id()] = c
	return c
}

func (t *topology) check(p *pod) {
	t.checkSpread(p)
	t.checkAffinity(p)
}

func (t *topology) checkSpread(p *pod) {
	for _, tsc := range p.p.Spec.TopologySpreadConstraints {
		if tsc.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		sel := selectorOf(tsc.LabelSelector)
		for _, k := range tsc.MatchLabelKeys {
			if v, ok := p.p.Labels[k]; ok {
				r, _ := labels.NewRequirement(k, selection.In, []string{v})
				sel = sel.Add(*r)
			}
		}
		honorAffinity := tsc.NodeAffinityPolicy == nil || *tsc.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
		honorTaints := tsc.NodeTaintsPolicy != nil && *tsc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
		eligible := func(n *node) bool {
			if _, ok := n.labels[tsc.TopologyKey]; !ok {
				return false
			}
			if honorAffinity && !nodeAffinityOK(p.p, n.labels) {
				return false
			}
			if honorTaints && !tolerates(n.taints, p.p.Spec.Tolerations) {
				return false
			}
			return true
		}
		id := fmt.Sprintf("%s|%s|%s|%v|%v|%s", p.p.Namespace, sel, tsc.TopologyKey, honorAffinity, honorTaints, filterID(p.p, honorAffinity, honorTaints))
		cnt, ok := t.spread[id]
		if !ok {
			cnt = &counts{byDomain: map[string]int{}}
			for _, n := range t.c.nodes {
				if !eligible(n) {
					continue
				}
				v := n.labels[tsc.TopologyKey]
				if _, seen := cnt.byDomain[v]; !seen {
					cnt.byDomain[v] = 0
				}
				for _, q := range n.pods {
					if q.p.Namespace == p.p.Namespace && sel.Matches(labels.Set(q.p.Labels)) {
						cnt.byDomain[v]++
					}
				}
			}
			t.spread[id] = cnt
		}
		d, ok := p.node.labels[tsc.TopologyKey]
		if !ok {
			t.c.fail(p, "PodTopologySpread", "node has no label %s", tsc.TopologyKey)
			continue
		}
		self := 0
		if sel.Matches(labels.Set(p.p.Labels)) && eligible(p.node) {
			self = 1
		}
		minC := -1
		for dom, n := range cnt.byDomain {
			if dom == d {
				n -= self
			}
			if minC < 0 || n < minC {
				minC = n
			}
		}
		minDomains := 1
		if tsc.MinDomains != nil {
			minDomains = int(*tsc.MinDomains)
		}
		if minC < 0 || len(cnt.byDomain) < minDomains {
			minC = 0
		}
		match := cnt.byDomain[d] - self
		selfMatch := 0
		if sel.Matches(labels.Set(p.p.Labels)) {
			selfMatch = 1
		}
		if skew := match + selfMatch - minC; skew > int(tsc.MaxSkew) {
			t.c.fail(p, "PodTopologySpread", "%s=%s skew %d > maxSkew %d (selector %s)", tsc.TopologyKey, d, skew, tsc.MaxSkew, sel)
		}
	}
}

func filterID(p *corev1.Pod, affinity, taints bool) string {
	var b strings.Builder
	if affinity {
		keys := make([]string, 0, len(p.Spec.NodeSelector))
		for k := range p.Spec.NodeSelector {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.WriteString(k + "=" + p.Spec.NodeSelector[k] + ",")
		}
		if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			bs, _ := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.Marshal()
			b.Write(bs)
		}
	}
	if taints {
		for _, t := range p.Spec.Tolerations {
			fmt.Fprintf(&b, "|%s/%s/%s/%s", t.Key, t.Operator, t.Value, t.Effect)
		}
	}
	return b.String()
}

func (t *topology) checkAffinity(p *pod) {
	a := p.p.Spec.Affinity
	if a != nil && a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
		allSatisfied, noneAnywhere, selfAll := true, true, true
		for _, at := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			tm := affinityTerm(p.p, at)
			cnt := t.termCounts(tm)
			self := 0
			if tm.matches(p.p) {
				self = 1
			} else {
				selfAll = false
			}
			d, ok := p.node.labels[tm.key]
			selfHere := 0
			if ok {
				selfHere = self
			}
			if !ok || cnt.byDomain[d]-selfHere <= 0 {
				allSatisfied = false
			}
			if cnt.total-selfHere > 0 {
				noneAnywhere = false
			}
		}
		if !allSatisfied && !(noneAnywhere && selfAll) {
			t.c.fail(p, "InterPodAffinity", "required pod affinity not satisfied")
		}
	}
	if a != nil && a.PodAntiAffinity != nil {
		for _, at := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			tm := affinityTerm(p.p, at)
			d, ok := p.node.labels[tm.key]
			if !ok {
				continue
			}
			cnt := t.termCounts(tm)
			self := 0
			if tm.matches(p.p) {
				self = 1
			}
			if cnt.byDomain[d]-self > 0 {
				t.c.fail(p, "InterPodAffinity", "pod anti-affinity on %s=%s violated", tm.key, d)
			}
		}
	}
	// existing and planned pods' anti-affinity against this pod
	for _, o := range t.antiAll {
		if !o.term.matches(p.p) {
			continue
		}
		d, ok := p.node.labels[o.term.key]
		if !ok {
			continue
		}
		owners := o.byDomain[d]
		if owns(p.p, o.term) {
			owners--
		}
		if owners > 0 {
			t.c.fail(p, "InterPodAffinity", "another pod's anti-affinity on %s=%s matches this pod", o.term.key, d)
		}
	}
}

func owns(p *corev1.Pod, tm term) bool {
	a := p.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		return false
	}
	for _, at := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		if affinityTerm(p, at).id() == tm.id() {
			return true
		}
	}
	return false
}
