package scheduling

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/dra"
)

// DRA is the dynamic resource allocation state a solve accounts for. With it, a pod's resource claims must be
// allocatable on the node it is planned on: on a new node, from the device model of its instance type; on an
// existing node, from the node's ResourceSlices less the devices other claims hold.
type DRA struct {
	// Claims are the cluster's ResourceClaims: the ones pods name, the ones generated from templates, and every
	// allocated claim (their devices are taken).
	Claims []*resourcev1.ResourceClaim
	// ClaimTemplates are the ResourceClaimTemplates pods name.
	ClaimTemplates []*resourcev1.ResourceClaimTemplate
	// DeviceClasses are the classes claims draw from.
	DeviceClasses []*resourcev1.DeviceClass
	// Slices are the ResourceSlices published on existing nodes.
	Slices []*resourcev1.ResourceSlice
	// Models gives the slices a new node of an instance type would carry (nil: new nodes have no devices).
	Models DeviceModels
}

// DeviceModels gives the ResourceSlices the DRA drivers would publish on a node of an instance type.
type DeviceModels interface {
	Slices(instanceType, nodeName string) []resourcev1.ResourceSlice
}

// draResourcePrefix names the pseudo-resources that stand for "the devices of one claim shape" in the solver's
// resource vectors: a pod with claims requests one unit of its shape; a node offers as many units as copies of the
// shape's claims its free devices can take.
const draResourcePrefix = "claims.dra.dovetail.sh/shape-"

// maxShapeFit caps how many pods of one claim shape a node is asked to fit.
const maxShapeFit = 128

// draShape is the claims of pods that allocate identical devices: the same claim specs in the same order.
type draShape struct {
	dim    corev1.ResourceName
	claims []*resourcev1.ResourceClaim // of the first pod, allocated as copies for every pod of the shape
	names  string                      // the claims as a pod names them, for reasons
}

// draPass rewrites a snapshot so the solver sees claims as resources, and checks the plan afterwards.
type draPass struct {
	ctx     context.Context
	alloc   *dra.Allocator
	models  DeviceModels
	shapes  []*draShape
	podNeed map[types.NamespacedName]*podClaims
	// nodes are the existing nodes' device states after their own pods' claims, by node name.
	nodes map[string]*dra.Node
	// typeFit caches new-node fits by instance type, modelFit by device signature (see typeNodeSig).
	typeFit  map[string][]int
	modelFit map[string][]int
	failed   map[types.NamespacedName]string
	// overlap[i][j]: shapes i and j both fit some node, so they may compete for its devices.
	overlap [][]bool
	// fitTypes[i] are the instance types on which shape i fits at least once (new or existing nodes); anyType[i]
	// says an existing node without an instance-type label fits it.
	fitTypes []map[string]bool
	anyType  []bool
}

// podClaims is what a pending pod needs from DRA.
type podClaims struct {
	shape  *draShape
	claims []*resourcev1.ResourceClaim // to allocate (not yet allocated)
}

// prepareDRA returns the snapshot the solver works on: unchanged when no pending pod has claims; otherwise a copy
// whose claim pods request their shape's pseudo-resource, whose instance types and existing nodes offer it, and
// whose pods with allocated claims are pinned to the node holding them. Pods whose claims cannot be resolved are
// left out with a reason.
func prepareDRA(ctx context.Context, snap *Snapshot) (*Snapshot, *draPass, error) {
	if snap.DRA == nil {
		return snap, nil, nil
	}
	withClaims := false
	for _, p := range snap.Pods {
		if p != nil && len(p.Spec.ResourceClaims) > 0 {
			withClaims = true
			break
		}
	}
	if !withClaims {
		return snap, nil, nil
	}
	d := snap.DRA
	pass := &draPass{ctx: ctx, alloc: dra.NewAllocator(d.DeviceClasses), models: d.Models, podNeed: map[types.NamespacedName]*podClaims{},
		nodes: map[string]*dra.Node{}, typeFit: map[string][]int{}, modelFit: map[string][]int{}, failed: map[types.NamespacedName]string{}}
	r := newClaimResolver(d, snap)

	out := *snap
	out.Pods = make([]*corev1.Pod, 0, len(snap.Pods))
	shapeByKey := map[string]*draShape{}
	type pending struct {
		pod   *corev1.Pod
		need  []*resourcev1.ResourceClaim
		names []string
		pin   string
	}
	var todo []pending
	for _, p := range snap.Pods {
		if p == nil || len(p.Spec.ResourceClaims) == 0 {
			out.Pods = append(out.Pods, p)
			continue
		}
		need, names, pin, why := r.resolve(p)
		if why != "" {
			pass.failed[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = why
			continue
		}
		todo = append(todo, pending{p, need, names, pin})
	}
	for _, t := range todo {
		if len(t.need) == 0 {
			out.Pods = append(out.Pods, pinPod(t.pod, t.pin, snap))
			continue
		}
		key := shapeKey(t.need)
		sh := shapeByKey[key]
		if sh == nil {
			sh = &draShape{claims: t.need, names: strings.Join(t.names, ", ")}
			shapeByKey[key] = sh
		}
		pass.podNeed[types.NamespacedName{Namespace: t.pod.Namespace, Name: t.pod.Name}] = &podClaims{shape: sh, claims: t.need}
		cp := pinPod(t.pod, t.pin, snap)
		if cp == t.pod {
			c := *t.pod
			cp = &c
		}
		cp.Spec.Overhead = cp.Spec.Overhead.DeepCopy()
		if cp.Spec.Overhead == nil {
			cp.Spec.Overhead = corev1.ResourceList{}
		}
		out.Pods = append(out.Pods, cp) // its shape's request is added once shapes are numbered
	}
	keys := make([]string, 0, len(shapeByKey))
	for k := range shapeByKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		sh := shapeByKey[k]
		sh.dim = corev1.ResourceName(fmt.Sprintf("%s%d", draResourcePrefix, i))
		pass.shapes = append(pass.shapes, sh)
	}
	one := *resource.NewQuantity(1, resource.DecimalSI)
	for _, p := range out.Pods {
		if p == nil {
			continue
		}
		if need := pass.podNeed[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}]; need != nil {
			p.Spec.Overhead[need.shape.dim] = one
		}
	}
	if len(pass.shapes) == 0 {
		return &out, pass, nil
	}

	// New nodes: every instance type offers each shape as many times as its device model fits it.
	out.InstanceTypes = make(map[string][]*cloudprovider.InstanceType, len(snap.InstanceTypes))
	copies := map[*cloudprovider.InstanceType]*cloudprovider.InstanceType{}
	for pool, its := range snap.InstanceTypes {
		list := make([]*cloudprovider.InstanceType, 0, len(its))
		for _, it := range its {
			if it == nil {
				list = append(list, it)
				continue
			}
			c, ok := copies[it]
			if !ok {
				fits, err := pass.fitType(it)
				if err != nil {
					return nil, nil, err
				}
				pass.noteOverlaps(fits)
				pass.noteTypes(fits, it.Name)
				cp := *it
				cp.Capacity = it.Capacity.DeepCopy()
				for i, sh := range pass.shapes {
					cp.Capacity[sh.dim] = *resource.NewQuantity(int64(fits[i]), resource.DecimalSI)
				}
				c = &cp
				copies[it] = c
			}
			list = append(list, c)
		}
		out.InstanceTypes[pool] = list
	}

	// Existing nodes and in-flight NodeClaims: their free devices after the claims already allocated there and
	// the claims of the pods already bound or nominated to them.
	out.Nodes = make([]*StateNode, 0, len(snap.Nodes))
	for _, sn := range snap.Nodes {
		if sn == nil {
			out.Nodes = append(out.Nodes, sn)
			continue
		}
		node, err := pass.existingNode(sn, d, r)
		if err != nil {
			return nil, nil, err
		}
		pass.nodes[sn.Name] = node
		cp := *sn
		cp.Allocatable = sn.Allocatable.DeepCopy()
		if cp.Allocatable == nil {
			cp.Allocatable = corev1.ResourceList{}
		}
		fits := make([]int, len(pass.shapes))
		for i, sh := range pass.shapes {
			k := 0
			if !node.Empty() {
				if k, err = node.Fit(ctx, sh.claims, maxShapeFit); err != nil {
					return nil, nil, fmt.Errorf("fitting claims %s on node %s: %w", sh.names, sn.Name, err)
				}
			}
			fits[i] = k
			cp.Allocatable[sh.dim] = *resource.NewQuantity(int64(k), resource.DecimalSI)
		}
		pass.noteOverlaps(fits)
		pass.noteTypes(fits, sn.Labels[corev1.LabelInstanceTypeStable])
		out.Nodes = append(out.Nodes, &cp)
	}
	out.Pods = pass.constrain(out.Pods)
	return &out, pass, nil
}

// fitType returns, per shape, how many pods of it a new node of the instance type fits by devices. Types whose
// models publish the same devices (most sizes of a family) share one answer.
func (p *draPass) fitType(it *cloudprovider.InstanceType) ([]int, error) {
	if f, ok := p.typeFit[it.Name]; ok {
		return f, nil
	}
	max := maxShapeFit
	if q, ok := it.Capacity[corev1.ResourcePods]; ok && int(q.Value()) < max {
		max = int(q.Value())
	}
	node, sig := p.typeNodeSig(it.Name)
	key := fmt.Sprintf("%d/%s", max, sig)
	if f, ok := p.modelFit[key]; ok {
		p.typeFit[it.Name] = f
		return f, nil
	}
	fits := make([]int, len(p.shapes))
	if !node.Empty() {
		for i, sh := range p.shapes {
			k, err := node.Fit(p.ctx, sh.claims, max)
			if err != nil {
				return nil, fmt.Errorf("fitting claims %s on instance type %s: %w", sh.names, it.Name, err)
			}
			fits[i] = k
		}
	}
	p.typeFit[it.Name] = fits
	p.modelFit[key] = fits
	return fits, nil
}

// typeNodeSig is typeNode with a signature of its devices: two types with one signature fit the same claims.
func (p *draPass) typeNodeSig(instanceType string) (*dra.Node, string) {
	const probe = "dovetail-model"
	var specs []resourcev1.ResourceSliceSpec
	if p.models != nil && instanceType != "" {
		for _, s := range p.models.Slices(instanceType, probe) {
			specs = append(specs, s.Spec)
		}
	}
	b, _ := json.Marshal(specs)
	return p.typeNode(instanceType), string(b)
}

// typeNode is an empty node of the instance type, with the devices of its model. Each type gets its own node and
// pool name, so the allocator's per-device caches never mix two types.
func (p *draPass) typeNode(instanceType string) *dra.Node {
	name := "dovetail-model-" + instanceType
	var slices []*resourcev1.ResourceSlice
	if p.models != nil && instanceType != "" {
		for _, s := range p.models.Slices(instanceType, name) {
			slices = append(slices, &s)
		}
	}
	return p.alloc.Node(name, nil, slices)
}

// existingNode is the device state of an existing node (its published slices) or of an in-flight NodeClaim (the
// model of its instance type), less allocated devices and the devices its own pods' claims will take.
func (p *draPass) existingNode(sn *StateNode, d *DRA, r *claimResolver) (*dra.Node, error) {
	var node *dra.Node
	if sn.InFlight {
		node = p.typeNode(sn.Labels[corev1.LabelInstanceTypeStable])
	} else {
		var slices []*resourcev1.ResourceSlice
		for _, s := range r.slicesByNode[sn.Name] {
			slices = append(slices, s)
		}
		node = p.alloc.Node(sn.Name, sn.Labels, slices)
	}
	if node.Empty() {
		return node, nil
	}
	for _, c := range d.Claims {
		if c != nil && c.Status.Allocation != nil && !r.released[c.Namespace+"/"+c.Name] {
			node.Reserve(c.Status.Allocation.Devices.Results)
		}
	}
	for _, pod := range sn.Pods {
		if pod == nil || len(pod.Spec.ResourceClaims) == 0 {
			continue
		}
		need, _, _, why := r.resolve(pod)
		if why != "" || len(need) == 0 {
			continue
		}
		// Best effort: a bound pod whose claims do not fit any more is the kube-scheduler's to sort out.
		if _, _, err := node.Allocate(p.ctx, need); err != nil {
			return nil, fmt.Errorf("allocating the claims of pod %s/%s on node %s: %w", pod.Namespace, pod.Name, sn.Name, err)
		}
	}
	return node, nil
}

// shapeKey identifies claims by their specs.
func shapeKey(claims []*resourcev1.ResourceClaim) string {
	specs := make([]resourcev1.ResourceClaimSpec, 0, len(claims))
	for _, c := range claims {
		specs = append(specs, c.Spec)
	}
	b, _ := json.Marshal(specs)
	return string(b)
}

// pinPod returns the pod pinned by hostname to node, or the pod itself when node is empty.
func pinPod(p *corev1.Pod, node string, snap *Snapshot) *corev1.Pod {
	if node == "" {
		return p
	}
	host := node
	for _, sn := range snap.Nodes {
		if sn != nil && sn.Name == node {
			if h, ok := sn.Labels[corev1.LabelHostname]; ok {
				host = h
			}
		}
	}
	c := *p
	c.Spec.NodeSelector = make(map[string]string, len(p.Spec.NodeSelector)+1)
	for k, v := range p.Spec.NodeSelector {
		c.Spec.NodeSelector[k] = v
	}
	c.Spec.NodeSelector[corev1.LabelHostname] = host
	return &c
}

// shapeLabel labels the solver's copies of claim pods with their shape, for the anti-affinity that keeps shapes
// competing for the same devices on separate nodes.
const shapeLabel = "claims.dra.dovetail.sh/shape"

// noteOverlaps records which shapes fit one node together.
func (p *draPass) noteOverlaps(fits []int) {
	if p.overlap == nil {
		p.overlap = make([][]bool, len(p.shapes))
		for i := range p.overlap {
			p.overlap[i] = make([]bool, len(p.shapes))
		}
	}
	for i := range fits {
		for j := range fits {
			if i != j && fits[i] > 0 && fits[j] > 0 {
				p.overlap[i][j] = true
			}
		}
	}
}

// noteTypes records the instance type of a node (or a new node's type) on which the shapes with fits > 0 fit.
func (p *draPass) noteTypes(fits []int, instanceType string) {
	if p.fitTypes == nil {
		p.fitTypes = make([]map[string]bool, len(p.shapes))
		p.anyType = make([]bool, len(p.shapes))
		for i := range p.fitTypes {
			p.fitTypes[i] = map[string]bool{}
		}
	}
	for i, k := range fits {
		switch {
		case k == 0:
		case instanceType == "":
			p.anyType[i] = true
		default:
			p.fitTypes[i][instanceType] = true
		}
	}
}

// constrain prepares the solver's copies of claim pods. A pod whose shape fits no instance type and no existing
// node is left out with a reason naming its claims. The others get a required node affinity to the instance types
// their claims fit on (the planner then never weighs the others), and their shape label with a required
// anti-affinity, on the hostname, to the pods of the shapes they overlap with: the planner counts each shape's
// devices on their own, which holds only for nodes with one shape. The plan is checked afterwards in any case
// (see finish).
func (p *draPass) constrain(pods []*corev1.Pod) []*corev1.Pod {
	index := map[*draShape]int{}
	for i, sh := range p.shapes {
		index[sh] = i
	}
	if p.fitTypes == nil {
		p.noteTypes(make([]int, len(p.shapes)), "")
	}
	out := pods[:0]
	for _, pod := range pods {
		if pod == nil {
			out = append(out, pod)
			continue
		}
		key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
		need := p.podNeed[key]
		if need == nil {
			out = append(out, pod)
			continue
		}
		i := index[need.shape]
		if len(p.fitTypes[i]) == 0 && !p.anyType[i] {
			p.failed[key] = "no instance type of the NodePools has devices for resource claims " + need.shape.names +
				", and no existing node has them free"
			continue
		}
		out = append(out, pod)
		if !p.anyType[i] {
			restrictTypes(pod, p.fitTypes[i])
		}
		labels := make(map[string]string, len(pod.Labels)+1)
		for k, v := range pod.Labels {
			labels[k] = v
		}
		labels[shapeLabel] = fmt.Sprint(i)
		pod.Labels = labels
		var others []string
		for j := range p.shapes {
			if p.overlap != nil && p.overlap[i][j] {
				others = append(others, fmt.Sprint(j))
			}
		}
		if len(others) == 0 {
			continue
		}
		a := &corev1.Affinity{}
		if pod.Spec.Affinity != nil {
			a = pod.Spec.Affinity.DeepCopy()
		}
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
			corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: shapeLabel, Operator: metav1.LabelSelectorOpIn, Values: others}}}})
		pod.Spec.Affinity = a
	}
	return out
}

// restrictTypes ANDs "instance type in allowed" into the pod's required node affinity.
func restrictTypes(pod *corev1.Pod, allowed map[string]bool) {
	names := make([]string, 0, len(allowed))
	for n := range allowed {
		names = append(names, n)
	}
	sort.Strings(names)
	req := corev1.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: names}
	a := &corev1.Affinity{}
	if pod.Spec.Affinity != nil {
		a = pod.Spec.Affinity.DeepCopy()
	}
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	sel := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if sel == nil || len(sel.NodeSelectorTerms) == 0 {
		sel = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	for t := range sel.NodeSelectorTerms {
		sel.NodeSelectorTerms[t].MatchExpressions = append(sel.NodeSelectorTerms[t].MatchExpressions, req)
	}
	a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = sel
	pod.Spec.Affinity = a
}
