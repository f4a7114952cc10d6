package scheduling

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
)

type podInfo struct {
	pod   *corev1.Pod
	key   types.NamespacedName
	class *class
}

// class is an equivalence class of pending pods: same namespace, labels, requests and scheduling constraints.
// Everything the solver decides for one pod holds for all of the class, so checks are made once per class.
type class struct {
	id          int
	key         string
	pods        []*podInfo
	namespace   string
	labels      map[string]string
	req         Vec
	reqTerms    []Requirements
	prefTerms   []Requirements
	tolerations []corev1.Toleration
	ports       []hostPort
	spreadHard  []*group
	spreadSoft  []*group
	affHard     []*group
	affSoft     []*group
	antiHard    []*group
	antiSoft    []*group
	matchedBy   []*group
	volumes     []volumeUse
	err         string
	tier        int
	// code is the reason code explainClass found when the class was left unplaced.
	code ReasonCode

	level    int
	maxLevel int
	cur      *constraints
}

// constraints are a class's effective hard constraints at its current relaxation level.
type constraints struct {
	id      int
	reqs    Requirements
	groups  []*group
	relaxed []string
	// tolerations are the class's tolerations (part of the constraint identity).
	tolerations []corev1.Toleration
	// affinity are the hard pod affinity groups; selfAffine says the class matches every one of them.
	affinity   []*group
	selfAffine bool
	// topo lists, per topology key (sorted), every group that constrains or matches the class.
	topo []keyGroups
	// memo keeps topologyCheck's answers on keys other than the hostname for planned nodes, and narrowed keeps
	// narrow's answers; both are indexed by sig id.
	memo     []topoMemo
	narrowed []narrowResult
}

// keyGroups are the groups on one topology key that concern a class: whether each constrains the class (isC) and
// whether the class's pods match its selector (isM, before node eligibility).
type keyGroups struct {
	key    string
	groups []*group
	isC    []bool
	isM    []bool
	spread *group // first spread group, used to order domain choices
	aff    *group // first affinity group
}

type hostPort struct {
	protocol corev1.Protocol
	ip       string
	port     int32
}

func (a hostPort) conflicts(b hostPort) bool {
	if a.protocol != b.protocol || a.port != b.port {
		return false
	}
	return a.ip == b.ip || a.ip == "" || b.ip == "" || a.ip == "0.0.0.0" || b.ip == "0.0.0.0"
}

func podHostPorts(pod *corev1.Pod) []hostPort {
	var out []hostPort
	add := func(c *corev1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			proto := p.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			out = append(out, hostPort{protocol: proto, ip: p.HostIP, port: p.HostPort})
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	return out
}

// requiredTerms returns the pod's nodeSelector intersected with each required node affinity term (ORed terms).
func requiredTerms(pod *corev1.Pod) ([]Requirements, error) {
	base := LabelRequirements(pod.Spec.NodeSelector)
	var terms []Requirements
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for i, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			if len(t.MatchFields) > 0 {
				return nil, fmt.Errorf("nodeAffinity term %d: matchFields is not supported", i)
			}
			r, err := NewRequirements(t.MatchExpressions...)
			if err != nil {
				return nil, fmt.Errorf("nodeAffinity term %d: %w", i, err)
			}
			terms = append(terms, base.Intersect(r))
		}
	}
	if len(terms) == 0 {
		terms = []Requirements{base}
	}
	return terms, nil
}

func classKey(pod *corev1.Pod) string {
	var b strings.Builder
	b.WriteString(pod.Namespace)
	b.WriteByte('|')
	keys := make([]string, 0, len(pod.Labels))
	for k := range pod.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(pod.Labels[k])
		b.WriteByte(',')
	}
	b.WriteByte('|')
	write := func(m interface{ Marshal() ([]byte, error) }) {
		bs, _ := m.Marshal()
		b.Write(bs)
		b.WriteByte('|')
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		write(&c.Resources)
		for j := range c.Ports {
			write(&c.Ports[j])
		}
	}
	b.WriteString("init|")
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		write(&c.Resources)
		if c.RestartPolicy != nil {
			b.WriteString(string(*c.RestartPolicy))
		}
		for j := range c.Ports {
			write(&c.Ports[j])
		}
	}
	ovKeys := make([]string, 0, len(pod.Spec.Overhead))
	for n := range pod.Spec.Overhead {
		ovKeys = append(ovKeys, string(n))
	}
	sort.Strings(ovKeys)
	for _, n := range ovKeys {
		q := pod.Spec.Overhead[corev1.ResourceName(n)]
		fmt.Fprintf(&b, "%s=%s,", n, q.String())
	}
	nsKeys := make([]string, 0, len(pod.Spec.NodeSelector))
	for k := range pod.Spec.NodeSelector {
		nsKeys = append(nsKeys, k)
	}
	sort.Strings(nsKeys)
	for _, k := range nsKeys {
		b.WriteString(k + "=" + pod.Spec.NodeSelector[k] + ",")
	}
	if pod.Spec.Affinity != nil {
		write(pod.Spec.Affinity)
	}
	for i := range pod.Spec.Tolerations {
		write(&pod.Spec.Tolerations[i])
	}
	for i := range pod.Spec.TopologySpreadConstraints {
		write(&pod.Spec.TopologySpreadConstraints[i])
	}
	for i := range pod.Spec.Volumes {
		write(&pod.Spec.Volumes[i])
	}
	return b.String()
}

func (s *solver) buildClasses() {
	byKey := map[string]*class{}
	for _, pod := range s.snap.Pods {
		if pod == nil {
			continue
		}
		k := classKey(pod)
		c, ok := byKey[k]
		if !ok {
			c = &class{key: k, namespace: pod.Namespace, labels: pod.Labels}
			s.initClass(c, pod)
			byKey[k] = c
			s.classes = append(s.classes, c)
		}
		pi := &podInfo{pod: pod, key: types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, class: c}
		c.pods = append(c.pods, pi)
	}
	for _, c := range s.classes {
		sort.Slice(c.pods, func(i, j int) bool {
			a, b := c.pods[i].key, c.pods[j].key
			if a.Namespace != b.Namespace {
				return a.Namespace < b.Namespace
			}
			return a.Name < b.Name
		})
		for _, g := range s.groups {
			if g.matchesPod(c.namespace, c.labels) {
				c.matchedBy = append(c.matchedBy, g)
			}
		}
		c.cur = s.constraintsAt(c)
	}
	sort.SliceStable(s.classes, func(i, j int) bool {
		a, b := s.classes[i], s.classes[j]
		if a.tier != b.tier {
			return a.tier < b.tier
		}
		if a.req[dimCPU] != b.req[dimCPU] {
			return a.req[dimCPU] > b.req[dimCPU]
		}
		if a.req[dimMemory] != b.req[dimMemory] {
			return a.req[dimMemory] > b.req[dimMemory]
		}
		return a.key < b.key
	})
	for i, c := range s.classes {
		c.id = i
	}
}

func (s *solver) initClass(c *class, pod *corev1.Pod) {
	c.req = s.dims.MustFromList(PodRequests(pod))
	c.tolerations = pod.Spec.Tolerations
	c.ports = podHostPorts(pod)
	c.tier = 2
	terms, err := requiredTerms(pod)
	if err != nil {
		c.err = err.Error()
		terms = []Requirements{{}}
	}
	volReqs, uses, verr := s.podVolumes(pod)
	if verr != "" && c.err == "" {
		c.err = verr
	}
	c.volumes = uses
	// topology spread counts nodes by the pod's own node affinity, without volume topology
	affinityTerms := append([]Requirements(nil), terms...)
	for i := range terms {
		terms[i] = terms[i].Intersect(volReqs)
	}
	c.reqTerms = terms
	if a := pod.Spec.Affinity; a != nil {
		if a.NodeAffinity != nil {
			prefs := append([]corev1.PreferredSchedulingTerm(nil), a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
			sort.SliceStable(prefs, func(i, j int) bool { return prefs[i].Weight > prefs[j].Weight })
			for _, p := range prefs {
				r, err := NewRequirements(p.Preference.MatchExpressions...)
				if err != nil {
					continue
				}
				c.prefTerms = append(c.prefTerms, r)
			}
		}
		if a.PodAffinity != nil {
			for _, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				c.affHard = append(c.affHard, s.affinityGroup(kindAffinity, pod, t))
			}
			for _, t := range sortedWeighted(a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution) {
				c.affSoft = append(c.affSoft, s.softAffinityGroup(kindAffinity, pod, t))
			}
		}
		if a.PodAntiAffinity != nil {
			for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				g := s.affinityGroup(kindAnti, pod, t)
				c.antiHard = append(c.antiHard, g)
				if g.key == labelHostname {
					c.tier = 0
				}
			}
			for _, t := range sortedWeighted(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) {
				c.antiSoft = append(c.antiSoft, s.softAffinityGroup(kindAnti, pod, t))
			}
		}
	}
	for _, tsc := range pod.Spec.TopologySpreadConstraints {
		g := s.spreadGroup(pod, tsc, affinityTerms)
		if tsc.WhenUnsatisfiable == corev1.ScheduleAnyway {
			c.spreadSoft = append(c.spreadSoft, g)
			continue
		}
		c.spreadHard = append(c.spreadHard, g)
		if g.key == labelHostname && c.tier > 1 {
			c.tier = 1
		}
	}
	c.maxLevel = len(c.reqTerms) - 1 + len(c.affSoft) + len(c.antiSoft) + len(c.prefTerms) + len(c.spreadSoft)
	if s.opts.PreferencePolicy == PreferencePolicyIgnore {
		c.level = len(c.reqTerms) - 1 // start with soft constraints removed after trying each required term
		c.ignorePrefs()
	}
	c.cur = s.constraintsAt(c)
}

func (c *class) ignorePrefs() {
	c.affSoft, c.antiSoft, c.prefTerms, c.spreadSoft = nil, nil, nil, nil
	c.maxLevel = len(c.reqTerms) - 1
}

func sortedWeighted(in []corev1.WeightedPodAffinityTerm) []corev1.PodAffinityTerm {
	w := append([]corev1.WeightedPodAffinityTerm(nil), in...)
	sort.SliceStable(w, func(i, j int) bool { return w[i].Weight > w[j].Weight })
	out := make([]corev1.PodAffinityTerm, len(w))
	for i := range w {
		out[i] = w[i].PodAffinityTerm
	}
	return out
}

// constraintsAt builds the class's hard constraints at its relaxation level. Relaxation order: required node
// affinity terms beyond the first, preferred pod affinity, preferred pod anti-affinity, preferred node affinity
// (heaviest first), ScheduleAnyway topology spread.
func (s *solver) constraintsAt(c *class) *constraints {
	l := c.level
	take := func(n int) int {
		k := min(l, n)
		l -= k
		return k
	}
	dropReq := take(len(c.reqTerms) - 1)
	dropAff := take(len(c.affSoft))
	dropAnti := take(len(c.antiSoft))
	dropPref := take(len(c.prefTerms))
	dropSpread := take(len(c.spreadSoft))
	out := &constraints{reqs: c.reqTerms[dropReq], tolerations: c.tolerations}
	if dropReq > 0 {
		out.relaxed = append(out.relaxed, fmt.Sprintf("%d required node affinity term(s)", dropReq))
	}
	if dropPref < len(c.prefTerms) {
		out.reqs = out.reqs.Intersect(c.prefTerms[dropPref])
	}
	out.groups = append(out.groups, c.spreadHard...)
	out.groups = append(out.groups, c.affHard...)
	out.groups = append(out.groups, c.antiHard...)
	out.groups = append(out.groups, c.affSoft[dropAff:]...)
	out.groups = append(out.groups, c.antiSoft[dropAnti:]...)
	out.groups = append(out.groups, c.spreadSoft[dropSpread:]...)
	for _, d := range []struct {
		n    int
		what string
	}{{dropAff, "preferred pod affinity"}, {dropAnti, "preferred pod anti-affinity"}, {dropPref, "preferred node affinity"}, {dropSpread, "ScheduleAnyway topology spread"}} {
		if d.n > 0 {
			out.relaxed = append(out.relaxed, fmt.Sprintf("%d %s term(s)", d.n, d.what))
		}
	}
	out.topo = topoGroups(out.groups, c.matchedBy)
	out.selfAffine = true
	for _, g := range out.groups {
		if g.kind == kindAffinity {
			out.affinity = append(out.affinity, g)
			if !containsGroup(c.matchedBy, g) {
				out.selfAffine = false
			}
		}
	}
	key := out.reqs.String() + "|" + tolerationsKey(c.tolerations)
	id, ok := s.constraintIDs[key]
	if !ok {
		id = len(s.constraintIDs)
		s.constraintIDs[key] = id
	}
	out.id = id
	return out
}

func topoGroups(cons, matched []*group) []keyGroups {
	byKey := map[string]*keyGroups{}
	var keys []string
	add := func(g *group) {
		kg, ok := byKey[g.key]
		if !ok {
			kg = &keyGroups{key: g.key}
			byKey[g.key] = kg
			keys = append(keys, g.key)
		}
		for _, x := range kg.groups {
			if x == g {
				return
			}
		}
		kg.groups = append(kg.groups, g)
		kg.isC = append(kg.isC, containsGroup(cons, g))
		kg.isM = append(kg.isM, containsGroup(matched, g))
		if g.kind == kindSpread && kg.spread == nil {
			kg.spread = g
		}
		if g.kind == kindAffinity && kg.aff == nil {
			kg.aff = g
		}
	}
	for _, g := range cons {
		add(g)
	}
	for _, g := range matched {
		add(g)
	}
	sort.Strings(keys)
	out := make([]keyGroups, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out
}

func tolerationsKey(ts []corev1.Toleration) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "%s/%s/%s/%s;", t.Key, t.Operator, t.Value, t.Effect)
	}
	return b.String()
}

// relax moves the class one relaxation step; false when nothing is left to relax.
func (s *solver) relax(c *class) bool {
	if c.level >= c.maxLevel {
		return false
	}
	c.level++
	c.cur = s.constraintsAt(c)
	return true
}

func selectorFor(sel *metav1.LabelSelector) labels.Selector {
	if sel == nil {
		return labels.Nothing()
	}
	out, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return labels.Nothing()
	}
	return out
}

func (s *solver) affinityGroup(kind groupKind, pod *corev1.Pod, t corev1.PodAffinityTerm) *group {
	return s.internGroup(affinityTermGroup(kind, pod, t, false))
}

func (s *solver) softAffinityGroup(kind groupKind, pod *corev1.Pod, t corev1.PodAffinityTerm) *group {
	return s.internGroup(affinityTermGroup(kind, pod, t, true))
}

func affinityTermGroup(kind groupKind, pod *corev1.Pod, t corev1.PodAffinityTerm, soft bool) *group {
	sel := selectorFor(t.LabelSelector)
	for _, k := range t.MatchLabelKeys {
		if v, ok := pod.Labels[k]; ok {
			if r, err := labels.NewRequirement(k, selection.In, []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	for _, k := range t.MismatchLabelKeys {
		if v, ok := pod.Labels[k]; ok {
			if r, err := labels.NewRequirement(k, selection.NotIn, []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	var ns map[string]bool
	if t.NamespaceSelector == nil || len(t.Namespaces) > 0 {
		ns = map[string]bool{}
		for _, n := range t.Namespaces {
			ns[n] = true
		}
		if len(t.Namespaces) == 0 {
			ns[pod.Namespace] = true
		}
	}
	return &group{kind: kind, key: t.TopologyKey, namespaces: ns, selector: sel, soft: soft}
}

func (s *solver) spreadGroup(pod *corev1.Pod, tsc corev1.TopologySpreadConstraint, terms []Requirements) *group {
	sel := selectorFor(tsc.LabelSelector)
	for _, k := range tsc.MatchLabelKeys {
		if v, ok := pod.Labels[k]; ok {
			if r, err := labels.NewRequirement(k, selection.In, []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	g := &group{kind: kindSpread, key: tsc.TopologyKey, namespaces: map[string]bool{pod.Namespace: true}, selector: sel,
		maxSkew: int(tsc.MaxSkew), minDomains: 1, soft: tsc.WhenUnsatisfiable == corev1.ScheduleAnyway}
	if tsc.MinDomains != nil {
		g.minDomains = int(*tsc.MinDomains)
	}
	if tsc.NodeAffinityPolicy == nil || *tsc.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor {
		g.filter = terms
	}
	if tsc.NodeTaintsPolicy != nil && *tsc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor {
		g.taintsHonor = true
		g.tolerations = pod.Spec.Tolerations
	}
	return s.internGroup(g)
}
