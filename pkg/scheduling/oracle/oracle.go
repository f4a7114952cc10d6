package oracle

import (
	"fmt"
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/requirements"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// Violation is one thing the kube-scheduler would refuse, or a plan inconsistency.
type Violation struct {
	Pod     string
	Node    string
	Plugin  string
	Message string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s on %s: %s: %s", v.Pod, v.Node, v.Plugin, v.Message)
}

type node struct {
	name     string
	labels   map[string]string
	taints   []corev1.Taint
	alloc    corev1.ResourceList
	pods     []*pod
	planned  bool
	volLimit map[string]int
}

type pod struct {
	p       *corev1.Pod
	node    *node
	planned bool
}

// Check validates every placement in plan against the cluster it produces. It returns no violations for a
// correct plan.
func Check(snap *scheduling.Snapshot, plan *scheduling.Plan) []Violation {
	c := &checker{snap: snap, byName: map[string]*node{}}
	c.build(plan)
	c.checkAll()
	sort.Slice(c.out, func(i, j int) bool { return c.out[i].String() < c.out[j].String() })
	return c.out
}

type checker struct {
	snap   *scheduling.Snapshot
	nodes  []*node
	byName map[string]*node
	pods   []*pod
	out    []Violation
}

func (c *checker) fail(p *pod, plugin, format string, args ...any) {
	name, nn := "", ""
	if p != nil {
		name = p.p.Namespace + "/" + p.p.Name
		if p.node != nil {
			nn = p.node.name
		}
	}
	c.out = append(c.out, Violation{Pod: name, Node: nn, Plugin: plugin, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) build(plan *scheduling.Plan) {
	pending := map[types.NamespacedName]*corev1.Pod{}
	for _, p := range c.snap.Pods {
		pending[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}
	for _, sn := range c.snap.Nodes {
		if sn.MarkedForDeletion {
			continue
		}
		lbl := map[string]string{}
		for k, v := range sn.Labels {
			lbl[k] = v
		}
		if _, ok := lbl[corev1.LabelHostname]; !ok {
			lbl[corev1.LabelHostname] = sn.Name
		}
		n := &node{name: sn.Name, labels: lbl, taints: sn.Taints, alloc: sn.Allocatable, volLimit: sn.VolumeLimits}
		for _, p := range sn.Pods {
			c.addPod(n, p, false)
		}
		c.addNode(n)
	}
	seen := map[types.NamespacedName]bool{}
	take := func(key types.NamespacedName, where string) *corev1.Pod {
		p, ok := pending[key]
		if !ok {
			c.out = append(c.out, Violation{Pod: key.String(), Node: where, Plugin: "Plan", Message: "pod is not pending"})
			return nil
		}
		if seen[key] {
			c.out = append(c.out, Violation{Pod: key.String(), Node: where, Plugin: "Plan", Message: "pod planned twice"})
			return nil
		}
		seen[key] = true
		return p
	}
	for _, pl := range plan.Placements {
		n := c.byName[pl.Node]
		if n == nil {
			c.out = append(c.out, Violation{Pod: pl.Pod.String(), Node: pl.Node, Plugin: "Plan", Message: "unknown node"})
			continue
		}
		if p := take(pl.Pod, pl.Node); p != nil {
			c.addPod(n, p, true)
		}
	}
	pools := map[string]*scheduling.NodePool{}
	for _, np := range c.snap.NodePools {
		pools[np.Name] = np
	}
	for _, nc := range plan.NodeClaims {
		n := c.materialize(nc, pools[nc.NodePool])
		if n == nil {
			continue
		}
		if _, dup := c.byName[n.name]; dup {
			c.out = append(c.out, Violation{Node: n.name, Plugin: "Plan", Message: "duplicate node name"})
			continue
		}
		c.addNode(n)
		for _, ds := range c.snap.DaemonSets {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: ds.Name + "-" + n.name,
				Labels: ds.Spec.Template.Labels}, Spec: ds.Spec.Template.Spec}
			if tolerates(n.taints, p.Spec.Tolerations) && nodeAffinityOK(p, n.labels) {
				c.addPod(n, p, false)
			}
		}
		for _, key := range nc.Pods {
			if p := take(key, n.name); p != nil {
				c.addPod(n, p, true)
			}
		}
	}
	for _, u := range plan.Unschedulable {
		if seen[u.Pod] {
			c.out = append(c.out, Violation{Pod: u.Pod.String(), Plugin: "Plan", Message: "pod both planned and unschedulable"})
		}
		seen[u.Pod] = true
		if u.Reason == "" {
			c.out = append(c.out, Violation{Pod: u.Pod.String(), Plugin: "Plan", Message: "unschedulable without a reason"})
		}
	}
	for key := range pending {
		if !seen[key] {
			c.out = append(c.out, Violation{Pod: key.String(), Plugin: "Plan", Message: "pod neither planned nor reported unschedulable"})
		}
	}
}

func (c *checker) addNode(n *node) {
	c.nodes = append(c.nodes, n)
	c.byName[n.name] = n
}

func (c *checker) addPod(n *node, p *corev1.Pod, planned bool) {
	pp := &pod{p: p, node: n, planned: planned}
	n.pods = append(n.pods, pp)
	c.pods = append(c.pods, pp)
}

// materialize turns a NodeClaimPlan into the node it would become with its cheapest option, checking the option
// against the plan's own requirements and the NodePool.
func (c *checker) materialize(nc *scheduling.NodeClaimPlan, np *scheduling.NodePool) *node {
	if np == nil {
		c.out = append(c.out, Violation{Node: nc.Name, Plugin: "Plan", Message: "unknown NodePool " + nc.NodePool})
		return nil
	}
	var it *cloudprovider.InstanceType
	for _, t := range c.snap.InstanceTypes[nc.NodePool] {
		if t.Name == nc.InstanceType {
			it = t
		}
	}
	if it == nil {
		c.out = append(c.out, Violation{Node: nc.Name, Plugin: "Plan", Message: "instance type " + nc.InstanceType + " not offered to the NodePool"})
		return nil
	}
	offered := false
	for _, o := range it.Offerings {
		if o.Available && o.Zone == nc.Zone && o.CapacityType == nc.CapacityType && math.Abs(o.Price-nc.Price) < 1e-9 {
			offered = true
		}
	}
	if !offered {
		c.out = append(c.out, Violation{Node: nc.Name, Plugin: "Plan", Message: fmt.Sprintf("no available offering %s %s %s at %v", it.Name, nc.Zone, nc.CapacityType, nc.Price)})
	}
	if len(nc.InstanceTypeOptions) == 0 || nc.InstanceTypeOptions[0].Name != nc.InstanceType {
		c.out = append(c.out, Violation{Node: nc.Name, Plugin: "Plan", Message: "first instance-type option is not the chosen type"})
	}
	lbl := map[string]string{}
	for k, v := range it.Labels {
		lbl[k] = v
	}
	lbl[corev1.LabelInstanceTypeStable] = it.Name
	lbl[corev1.LabelTopologyZone] = nc.Zone
	lbl["karpenter.sh/capacity-type"] = nc.CapacityType
	lbl["karpenter.sh/nodepool"] = np.Name
	for k, v := range np.Labels {
		lbl[k] = v
	}
	for k, v := range nc.Labels {
		lbl[k] = v
	}
	lbl[corev1.LabelHostname] = nc.Name
	// the node must satisfy the NodePool's and the NodeClaim's requirements
	for _, r := range append(append([]scheduling.NodeSelectorRequirementWithMinValues(nil), np.Requirements...), nc.Requirements...) {
		v, ok := lbl[r.Key]
		if !requirements.Match(r.NodeSelectorRequirement, v, ok) {
			c.out = append(c.out, Violation{Node: nc.Name, Plugin: "Plan", Message: fmt.Sprintf("node labels %s=%q break requirement %s %s %v", r.Key, v, r.Key, r.Operator, r.Values)})
		}
	}
	alloc := corev1.ResourceList{}
	over := it.Overhead.Total()
	for name, q := range it.Capacity {
		a := q.DeepCopy()
		if o, ok := over[name]; ok {
			a.Sub(o)
		}
		alloc[name] = a
	}
	return &node{name: nc.Name, labels: lbl, taints: np.Taints, alloc: alloc, planned: true}
}

func (c *checker) checkAll() {
	c.checkResources()
	t := newTopology(c)
	for _, p := range c.pods {
		if !p.planned {
			continue
		}
		n := p.node
		if !nodeAffinityOK(p.p, n.labels) {
			c.fail(p, "NodeAffinity", "node labels do not satisfy nodeSelector/required node affinity")
		}
		if !tolerates(n.taints, p.p.Spec.Tolerations) {
			c.fail(p, "TaintToleration", "untolerated taint")
		}
		c.checkPorts(p)
		c.checkVolumes(p)
		t.check(p)
	}
}

// requests returns the pod's effective requests: max(sum of app containers + sidecars, each init step) + overhead.
func requests(p *corev1.Pod) map[corev1.ResourceName]int64 {
	val := func(n corev1.ResourceName, q resource.Quantity) int64 {
		if n == corev1.ResourceCPU {
			return q.MilliValue()
		}
		return q.Value()
	}
	reqOf := func(c corev1.Container) map[corev1.ResourceName]int64 {
		m := map[corev1.ResourceName]int64{}
		for n, q := range c.Resources.Limits {
			m[n] = val(n, q)
		}
		for n, q := range c.Resources.Requests {
			m[n] = val(n, q)
		}
		return m
	}
	apps := map[corev1.ResourceName]int64{}
	for _, ct := range p.Spec.Containers {
		for n, v := range reqOf(ct) {
			apps[n] += v
		}
	}
	side := map[corev1.ResourceName]int64{}
	peak := map[corev1.ResourceName]int64{}
	for _, ct := range p.Spec.InitContainers {
		r := reqOf(ct)
		always := ct.RestartPolicy != nil && *ct.RestartPolicy == corev1.ContainerRestartPolicyAlways
		for n, v := range r {
			if always {
				side[n] += v
				peak[n] = max(peak[n], side[n])
			} else {
				peak[n] = max(peak[n], side[n]+v)
			}
		}
	}
	out := map[corev1.ResourceName]int64{}
	for n, v := range apps {
		out[n] = v
	}
	for n, v := range side {
		out[n] += v
	}
	for n, v := range peak {
		out[n] = max(out[n], v)
	}
	for n, q := range p.Spec.Overhead {
		out[n] += val(n, q)
	}
	out[corev1.ResourcePods] = 1
	return out
}

func (c *checker) checkResources() {
	for _, n := range c.nodes {
		used := map[corev1.ResourceName]int64{}
		for _, p := range n.pods {
			for r, v := range requests(p.p) {
				used[r] += v
			}
		}
		for r, v := range used {
			if v == 0 {
				continue
			}
			q, ok := n.alloc[r]
			var have int64
			if ok {
				if r == corev1.ResourceCPU {
					have = q.MilliValue()
				} else {
					have = q.Value()
				}
			}
			if v > have {
				for _, p := range n.pods {
					if p.planned {
						c.fail(p, "NodeResourcesFit", "node %s: %s requested %d > allocatable %d", n.name, r, v, have)
						break
					}
				}
			}
		}
	}
}

func termMatches(t corev1.NodeSelectorTerm, lbl map[string]string) bool {
	for _, e := range t.MatchExpressions {
		v, ok := lbl[e.Key]
		if !requirements.Match(e, v, ok) {
			return false
		}
	}
	return true
}

func nodeAffinityOK(p *corev1.Pod, lbl map[string]string) bool {
	for k, v := range p.Spec.NodeSelector {
		if lbl[k] != v {
			return false
		}
		if _, ok := lbl[k]; !ok {
			return false
		}
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		if termMatches(t, lbl) {
			return true
		}
	}
	return false
}

func tolerates(taints []corev1.Taint, tols []corev1.Toleration) bool {
	for i := range taints {
		t := taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		ok := false
		for _, tol := range tols {
			if scheduling.ToleratesTaint(&tol, &t) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

type port struct {
	proto corev1.Protocol
	ip    string
	port  int32
}

func ports(p *corev1.Pod) []port {
	var out []port
	cs := append([]corev1.Container(nil), p.Spec.Containers...)
	for _, ic := range p.Spec.InitContainers {
		if ic.RestartPolicy != nil && *ic.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			cs = append(cs, ic)
		}
	}
	for _, ct := range cs {
		for _, cp := range ct.Ports {
			if cp.HostPort <= 0 {
				continue
			}
			proto := cp.Protocol
			if proto == "" {
				proto = corev1.ProtocolTCP
			}
			ip := cp.HostIP
			if ip == "" {
				ip = "0.0.0.0"
			}
			out = append(out, port{proto, ip, cp.HostPort})
		}
	}
	return out
}

func (c *checker) checkPorts(p *pod) {
	mine := ports(p.p)
	if len(mine) == 0 {
		return
	}
	for _, q := range p.node.pods {
		if q == p {
			continue
		}
		for _, a := range ports(q.p) {
			for _, b := range mine {
				if a.proto == b.proto && a.port == b.port && (a.ip == b.ip || a.ip == "0.0.0.0" || b.ip == "0.0.0.0") {
					c.fail(p, "NodePorts", "host port %d/%s in use by %s", b.port, b.proto, q.p.Name)
					return
				}
			}
		}
	}
}

func (c *checker) checkVolumes(p *pod) {
	lbl := p.node.labels
	countDrivers := func(q *corev1.Pod, into map[string]map[string]bool) {
		for _, v := range q.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			pvc := c.pvc(q.Namespace, v.PersistentVolumeClaim.ClaimName)
			if pvc == nil {
				continue
			}
			driver, id := "", ""
			if pvc.Spec.VolumeName != "" {
				if pv := c.pv(pvc.Spec.VolumeName); pv != nil && pv.Spec.CSI != nil {
					driver, id = pv.Spec.CSI.Driver, pv.Name
				}
			} else if pvc.Spec.StorageClassName != nil {
				if sc := c.sc(*pvc.Spec.StorageClassName); sc != nil {
					driver, id = sc.Provisioner, pvc.Namespace+"/"+pvc.Name
				}
			}
			if driver == "" {
				continue
			}
			if into[driver] == nil {
				into[driver] = map[string]bool{}
			}
			into[driver][id] = true
		}
	}
	for _, v := range p.p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvc := c.pvc(p.p.Namespace, v.PersistentVolumeClaim.ClaimName)
		if pvc == nil {
			c.fail(p, "VolumeBinding", "claim %s not found", v.PersistentVolumeClaim.ClaimName)
			continue
		}
		if pvc.Spec.VolumeName != "" {
			pv := c.pv(pvc.Spec.VolumeName)
			if pv == nil {
				c.fail(p, "VolumeBinding", "volume %s not found", pvc.Spec.VolumeName)
				continue
			}
			if pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil {
				ok := false
				for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
					if termMatches(t, lbl) {
						ok = true
					}
				}
				if !ok {
					c.fail(p, "VolumeBinding", "node does not match node affinity of volume %s", pv.Name)
				}
			}
			continue
		}
		if pvc.Spec.StorageClassName == nil {
			c.fail(p, "VolumeBinding", "unbound claim %s without storage class", pvc.Name)
			continue
		}
		sc := c.sc(*pvc.Spec.StorageClassName)
		if sc == nil || sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
			c.fail(p, "VolumeBinding", "unbound immediate claim %s", pvc.Name)
			continue
		}
		if len(sc.AllowedTopologies) > 0 {
			ok := false
			for _, term := range sc.AllowedTopologies {
				all := true
				for _, e := range term.MatchLabelExpressions {
					if !requirements.Match(corev1.NodeSelectorRequirement{Key: e.Key, Operator: corev1.NodeSelectorOpIn, Values: e.Values}, lbl[e.Key], hasKey(lbl, e.Key)) {
						all = false
					}
				}
				if all {
					ok = true
				}
			}
			if !ok {
				c.fail(p, "VolumeBinding", "node is outside allowed topologies of storage class %s", sc.Name)
			}
		}
	}
	if len(p.node.volLimit) > 0 {
		used := map[string]map[string]bool{}
		for _, q := range p.node.pods {
			countDrivers(q.p, used)
		}
		for d, ids := range used {
			if lim, ok := p.node.volLimit[d]; ok && len(ids) > lim {
				c.fail(p, "NodeVolumeLimits", "%d %s volumes exceed the limit %d", len(ids), d, lim)
			}
		}
	}
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

func (c *checker) pvc(ns, name string) *corev1.PersistentVolumeClaim {
	for _, x := range c.snap.PersistentVolumeClaims {
		if x.Namespace == ns && x.Name == name {
			return x
		}
	}
	return nil
}

func (c *checker) pv(name string) *corev1.PersistentVolume {
	for _, x := range c.snap.PersistentVolumes {
		if x.Name == name {
			return x
		}
	}
	return nil
}

func (c *checker) sc(name string) *storagev1.StorageClass {
	for _, x := range c.snap.StorageClasses {
		if x.Name == name {
			return x
		}
	}
	return nil
}

func selectorOf(s *metav1.LabelSelector) labels.Selector {
	if s == nil {
		return labels.Nothing()
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}
