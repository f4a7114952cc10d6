package oracle

import (
	"fmt"
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/utils/ptr"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/scheduling"
)

// Labels and annotations the materialized cluster carries.
const (
	labelCapacityType = "karpenter.sh/capacity-type"
	labelNodePool     = "karpenter.sh/nodepool"
	annBindCompleted  = "pv.kubernetes.io/bind-completed"
)

// Violation is one placement the kube-scheduler would refuse, or an inconsistency of the plan itself
// (Plugin "Plan").
type Violation struct {
	Pod     string
	Node    string
	Plugin  string
	Message string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s on %s: %s: %s", v.Pod, v.Node, v.Plugin, v.Message)
}

// cluster is the state a plan produces: Nodes with every pod bound, and the storage objects.
type cluster struct {
	nodes []*corev1.Node
	// pods holds the pods bound to each node: running pods, DaemonSet pods and planned pods.
	pods map[string][]*corev1.Pod
	// planned are the placed pods to check, in a stable order.
	planned []*corev1.Pod
	// objects are the API objects the volume and affinity plugins list: PVCs, PVs, StorageClasses, CSINodes,
	// Namespaces.
	objects []runtime.Object
	// hasVolumes is true when a pod in the cluster mounts a PersistentVolumeClaim.
	hasVolumes bool
	// claims are the planned NodeClaims.
	claims []*claim
	// daemons are the DaemonSets' pods, not yet bound.
	daemons []*corev1.Pod
	out     []Violation
}

// claim is a planned NodeClaim, the Node it becomes with its cheapest option (base) and its planned pods; see
// variants for the other Nodes it may become.
type claim struct {
	nc      *scheduling.NodeClaimPlan
	np      *scheduling.NodePool
	base    *corev1.Node
	planned []*corev1.Pod
}

func (c *cluster) planViolation(pod, node, format string, args ...any) {
	c.out = append(c.out, Violation{Pod: pod, Node: node, Plugin: "Plan", Message: fmt.Sprintf(format, args...)})
}

// materialize builds the cluster of snap after plan: existing nodes and in-flight NodeClaims as given (hostname
// label defaulted to the name), one Node per planned NodeClaim with its cheapest instance type, and DaemonSet pods
// on the new Nodes they would run on. Nodes marked for deletion are left out.
func materialize(snap *scheduling.Snapshot, plan *scheduling.Plan) *cluster {
	c := &cluster{pods: map[string][]*corev1.Pod{}}
	for _, ds := range snap.DaemonSets {
		c.daemons = append(c.daemons, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: ds.Name,
			Labels: ds.Spec.Template.Labels}, Spec: *ds.Spec.Template.Spec.DeepCopy()})
	}
	pending := map[types.NamespacedName]*corev1.Pod{}
	for _, p := range snap.Pods {
		pending[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
	}
	known := map[string]bool{}
	for _, sn := range snap.Nodes {
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
		c.addNode(node(sn.Name, lbl, sn.Taints, sn.Allocatable), sn.VolumeLimits)
		known[sn.Name] = true
		for _, p := range sn.Pods {
			c.bind(p, sn.Name)
		}
	}
	seen := map[types.NamespacedName]bool{}
	take := func(key types.NamespacedName, where string) *corev1.Pod {
		p, ok := pending[key]
		switch {
		case !ok:
			c.planViolation(key.String(), where, "pod is not pending")
			return nil
		case seen[key]:
			c.planViolation(key.String(), where, "pod planned twice")
			return nil
		}
		seen[key] = true
		return p
	}
	for _, pl := range plan.Placements {
		if !known[pl.Node] {
			c.planViolation(pl.Pod.String(), pl.Node, "unknown node")
			continue
		}
		if p := take(pl.Pod, pl.Node); p != nil {
			c.planned = append(c.planned, c.bind(p, pl.Node))
		}
	}
	pools := map[string]*scheduling.NodePool{}
	for _, np := range snap.NodePools {
		pools[np.Name] = np
	}
	for _, nc := range plan.NodeClaims {
		n := c.newNode(snap, nc, pools[nc.NodePool])
		if n == nil {
			continue
		}
		if known[n.Name] {
			c.planViolation("", n.Name, "duplicate node name")
			continue
		}
		known[n.Name] = true
		// a new node attaches what its instance type attaches until its CSINode says otherwise
		var limits map[string]int
		if it := instanceType(snap, nc.NodePool, nc.InstanceType); it != nil {
			limits = it.VolumeLimits
		}
		c.addNode(n, limits)
		for _, p := range c.daemonPods(n) {
			c.bind(p, n.Name)
		}
		cl := &claim{nc: nc, np: pools[nc.NodePool], base: n}
		for _, key := range nc.Pods {
			if p := take(key, n.Name); p != nil {
				p = c.bind(p, n.Name)
				c.planned = append(c.planned, p)
				cl.planned = append(cl.planned, p)
			}
		}
		c.claims = append(c.claims, cl)
	}
	for _, u := range plan.Unschedulable {
		if seen[u.Pod] {
			c.planViolation(u.Pod.String(), "", "pod both planned and unschedulable")
		}
		seen[u.Pod] = true
		if u.Reason == "" {
			c.planViolation(u.Pod.String(), "", "unschedulable without a reason")
		}
	}
	for key := range pending {
		if !seen[key] {
			c.planViolation(key.String(), "", "pod neither planned nor reported unschedulable")
		}
	}
	sort.Slice(c.planned, func(i, j int) bool {
		a, b := c.planned[i], c.planned[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	c.storage(snap)
	return c
}

func node(name string, lbl map[string]string, taints []corev1.Taint, alloc corev1.ResourceList) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl, UID: types.UID("node-" + name)},
		Spec:       corev1.NodeSpec{Taints: append([]corev1.Taint(nil), taints...)},
		Status: corev1.NodeStatus{Capacity: alloc.DeepCopy(), Allocatable: alloc.DeepCopy(),
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

func (c *cluster) addNode(n *corev1.Node, volumeLimits map[string]int) {
	c.nodes = append(c.nodes, n)
	c.pods[n.Name] = nil
	if len(volumeLimits) == 0 {
		return
	}
	csi := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}
	drivers := make([]string, 0, len(volumeLimits))
	for d := range volumeLimits {
		drivers = append(drivers, d)
	}
	sort.Strings(drivers)
	for _, d := range drivers {
		csi.Spec.Drivers = append(csi.Spec.Drivers, storagev1.CSINodeDriver{Name: d, NodeID: n.Name,
			Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To(int32(volumeLimits[d]))}})
	}
	c.objects = append(c.objects, csi)
}

// bind returns a copy of p bound to node and records it there.
func (c *cluster) bind(p *corev1.Pod, node string) *corev1.Pod {
	p = p.DeepCopy()
	p.Spec.NodeName = node
	if p.UID == "" {
		p.UID = types.UID("pod-" + p.Namespace + "-" + p.Name)
	}
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			c.hasVolumes = true
		}
	}
	c.pods[node] = append(c.pods[node], p)
	return p
}

// daemonPods returns the DaemonSet pods that run on n, named after it.
func (c *cluster) daemonPods(n *corev1.Node) []*corev1.Pod {
	var out []*corev1.Pod
	for _, d := range c.daemons {
		if daemonRunsOn(d, n) {
			p := d.DeepCopy()
			p.Name += "-" + n.Name
			p.UID = types.UID("pod-" + p.Namespace + "-" + p.Name)
			p.Spec.NodeName = n.Name
			out = append(out, p)
		}
	}
	return out
}

// daemonRunsOn tells whether the DaemonSet controller would run pod on n: its required node affinity matches and
// it tolerates every NoSchedule and NoExecute taint.
func daemonRunsOn(pod *corev1.Pod, n *corev1.Node) bool {
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(n); err != nil || !ok {
		return false
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(n.Spec.Taints, pod.Spec.Tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	})
	return !untolerated
}

// newNode is the Node a planned NodeClaim becomes when launched with its cheapest option: see nodeFor. The option
// must be an available offering and satisfy the NodePool's and the claim's requirements.
func (c *cluster) newNode(snap *scheduling.Snapshot, nc *scheduling.NodeClaimPlan, np *scheduling.NodePool) *corev1.Node {
	if np == nil {
		c.planViolation("", nc.Name, "unknown NodePool %s", nc.NodePool)
		return nil
	}
	it := instanceType(snap, nc.NodePool, nc.InstanceType)
	if it == nil {
		c.planViolation("", nc.Name, "instance type %s is not offered to NodePool %s", nc.InstanceType, nc.NodePool)
		return nil
	}
	offered := false
	for _, o := range it.Offerings {
		if o.Available && o.Zone == nc.Zone && o.CapacityType == nc.CapacityType && math.Abs(o.Price-nc.Price) < 1e-9 {
			offered = true
		}
	}
	if !offered {
		c.planViolation("", nc.Name, "no available offering %s %s %s at %v", it.Name, nc.Zone, nc.CapacityType, nc.Price)
	}
	if len(nc.InstanceTypeOptions) == 0 || nc.InstanceTypeOptions[0].Name != nc.InstanceType {
		c.planViolation("", nc.Name, "the first instance-type option is not the chosen type %s", nc.InstanceType)
	}
	n := nodeFor(nc, np, it, nc.Zone, nc.CapacityType)
	if k := broken(n, nc, np); k != nil {
		c.planViolation("", nc.Name, "node label %s=%q breaks requirement %s %s %v", k.Key, n.Labels[k.Key], k.Key, k.Operator, k.Values)
	}
	return n
}

// variants returns the Nodes cl may become other than its base: each instance-type option in each available
// offering whose node satisfies the NodePool's and the claim's requirements, as CreateFleet may launch any of them.
func (c *cluster) variants(snap *scheduling.Snapshot, cl *claim) []*corev1.Node {
	nc, np := cl.nc, cl.np
	var out []*corev1.Node
	seen := map[string]bool{nc.InstanceType + "/" + nc.Zone + "/" + nc.CapacityType: true}
	for _, o := range nc.InstanceTypeOptions {
		it := instanceType(snap, nc.NodePool, o.Name)
		if it == nil {
			c.planViolation("", nc.Name, "instance-type option %s is not offered to NodePool %s", o.Name, nc.NodePool)
			continue
		}
		for _, off := range it.Offerings {
			k := it.Name + "/" + off.Zone + "/" + off.CapacityType
			if !off.Available || seen[k] {
				continue
			}
			seen[k] = true
			if n := nodeFor(nc, np, it, off.Zone, off.CapacityType); broken(n, nc, np) == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

func instanceType(snap *scheduling.Snapshot, pool, name string) *cloudprovider.InstanceType {
	for _, t := range snap.InstanceTypes[pool] {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// nodeFor is the Node nc becomes as instance type it in zone with capacity type ct: the instance type's labels and
// allocatable (capacity less overhead), zone, capacity type and NodePool labels, the NodePool's and the claim's
// labels, hostname = claim name, and the claim's taints (startup taints are gone once the node is initialized).
func nodeFor(nc *scheduling.NodeClaimPlan, np *scheduling.NodePool, it *cloudprovider.InstanceType, zone, ct string) *corev1.Node {
	lbl := map[string]string{}
	for k, v := range it.Labels {
		lbl[k] = v
	}
	for k, v := range np.Labels {
		lbl[k] = v
	}
	for k, v := range nc.Labels {
		lbl[k] = v
	}
	lbl[corev1.LabelInstanceTypeStable] = it.Name
	lbl[corev1.LabelTopologyZone] = zone
	lbl[labelCapacityType] = ct
	lbl[labelNodePool] = np.Name
	lbl[corev1.LabelHostname] = nc.Name
	return node(nc.Name, lbl, nc.Taints, it.Allocatable())
}

// broken returns the first NodePool or claim requirement n's labels break, or nil.
func broken(n *corev1.Node, nc *scheduling.NodeClaimPlan, np *scheduling.NodePool) *corev1.NodeSelectorRequirement {
	for _, r := range append(append([]scheduling.NodeSelectorRequirementWithMinValues(nil), np.Requirements...), nc.Requirements...) {
		sel := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{r.NodeSelectorRequirement}}}}
		if ok, err := corev1helpers.MatchNodeSelectorTerms(n, sel); err != nil || !ok {
			return &r.NodeSelectorRequirement
		}
	}
	return nil
}

// storage adds the snapshot's volume objects as the PV controller leaves them: a claim naming an existing volume
// is bound both ways (bind-completed annotation, claimRef, phase Bound). It also adds every pod's namespace.
func (c *cluster) storage(snap *scheduling.Snapshot) {
	pvs := map[string]*corev1.PersistentVolume{}
	for _, pv := range snap.PersistentVolumes {
		pvs[pv.Name] = pv.DeepCopy()
	}
	for _, pvc := range snap.PersistentVolumeClaims {
		pvc = pvc.DeepCopy()
		if pv, ok := pvs[pvc.Spec.VolumeName]; ok {
			if pvc.Annotations == nil {
				pvc.Annotations = map[string]string{}
			}
			pvc.Annotations[annBindCompleted] = "yes"
			pvc.Status.Phase = corev1.ClaimBound
			pvc.Status.Capacity = pv.Spec.Capacity
			if len(pvc.Spec.AccessModes) == 0 {
				pvc.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
			}
			pv.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID}
			pv.Status.Phase = corev1.VolumeBound
		}
		c.objects = append(c.objects, pvc)
	}
	names := make([]string, 0, len(pvs))
	for n := range pvs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c.objects = append(c.objects, pvs[n])
	}
	for _, sc := range snap.StorageClasses {
		c.objects = append(c.objects, sc.DeepCopy())
	}
	namespaces := map[string]bool{}
	for _, pods := range c.pods {
		for _, p := range pods {
			namespaces[p.Namespace] = true
		}
	}
	for _, p := range snap.Pods {
		namespaces[p.Namespace] = true
	}
	nss := make([]string, 0, len(namespaces))
	for ns := range namespaces {
		nss = append(nss, ns)
	}
	sort.Strings(nss)
	for _, ns := range nss {
		c.objects = append(c.objects, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{corev1.LabelMetadataName: ns}}})
	}
}

// selectors adds the objects default topology spread selectors are deduced from.
func (c *cluster) selectors(src scheduling.SelectorSources) {
	for _, o := range src.Services {
		c.objects = append(c.objects, o.DeepCopy())
	}
	for _, o := range src.ReplicaSets {
		c.objects = append(c.objects, o.DeepCopy())
	}
	for _, o := range src.StatefulSets {
		c.objects = append(c.objects, o.DeepCopy())
	}
	for _, o := range src.ReplicationControllers {
		c.objects = append(c.objects, o.DeepCopy())
	}
}
