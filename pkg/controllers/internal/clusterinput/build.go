package clusterinput

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/capacitybuffer"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/controllers/deps"
	"github.com/dovetail/dovetail/pkg/controllers/provisioning/solver"
	"github.com/dovetail/dovetail/pkg/requirements"
)

// Build builds the scheduler's input around pods: the usable NodePools with their instance types and
// usage, the NodeClaims in flight with the room they have left, every Node with the pods bound to it (from
// all), the DaemonSets, and the volume objects that volumePods use. The provisioner passes the pending pods;
// the disruption controller passes no pods and the pods of the nodes it may move.
func Build(ctx context.Context, d deps.Deps, pods []*corev1.Pod, all []*corev1.Pod, claims []karpv1.NodeClaim, volumePods []*corev1.Pod) (in solver.Input, err error) {
	logger := log.FromContext(ctx)
	in.Pods = append([]*corev1.Pod(nil), pods...)
	sort.Slice(in.Pods, func(i, j int) bool { return solver.PodKey(in.Pods[i]) < solver.PodKey(in.Pods[j]) })

	npList := &karpv1.NodePoolList{}
	if err := d.Client.List(ctx, npList); err != nil {
		return in, fmt.Errorf("listing nodepools: %w", err)
	}
	usage := map[string]corev1.ResourceList{}
	for i := range claims {
		nc := &claims[i]
		pool := nc.NodePoolName()
		if pool == "" {
			continue
		}
		if usage[pool] == nil {
			usage[pool] = corev1.ResourceList{}
		}
		if nc.Status.Capacity != nil {
			solver.Add(usage[pool], nc.Status.Capacity)
		} else {
			solver.Add(usage[pool], nc.Spec.Resources.Requests)
		}
		solver.Add(usage[pool], corev1.ResourceList{solver.ResourceNodes: resource.MustParse("1")})
	}

	typesByPool := map[string][]*cloudprovider.InstanceType{}
	sort.Slice(npList.Items, func(i, j int) bool { return npList.Items[i].Name < npList.Items[j].Name })
	for i := range npList.Items {
		np := &npList.Items[i]
		if !np.DeletionTimestamp.IsZero() || np.IsStatic() {
			continue
		}
		if cond := np.GetCondition(karpv1.ConditionTypeReady); cond != nil && cond.Status == metav1.ConditionFalse {
			logger.V(1).Info("skipping nodepool that is not ready", "nodepool", np.Name, "reason", cond.Reason, "message", cond.Message)
			continue
		}
		its, err := d.CloudProvider.GetInstanceTypes(ctx, np)
		if err != nil {
			if cloudprovider.IsThrottled(err) {
				// The SDK retried with backoff already; the next pass asks again.
				logger.Info("listing instance types was throttled, skipping nodepool for this pass", "nodepool", np.Name, "error", err.Error())
			} else {
				logger.Error(err, "listing instance types, skipping nodepool", "nodepool", np.Name)
			}
			continue
		}
		typesByPool[np.Name] = its
		in.NodePools = append(in.NodePools, solver.NodePoolOption{NodePool: np, InstanceTypes: its, Usage: usage[np.Name]})
	}

	// Each instance type's allocatable, and the least allocatable of each set of requirements in a NodePool,
	// computed once a pass: a 2,000-pod scale-out's 1,800 NodeClaims waiting for their launch each allow dozens of
	// types, and computing them anew for each was a tenth of all allocation, then (each type matched against each
	// NodeClaim's requirements) most of the pass's snapshot.
	allocatable := &allocatableMemo{byType: map[*cloudprovider.InstanceType]corev1.ResourceList{}, byRequirements: map[string]corev1.ResourceList{}}
	if in.Nodes, err = nodes(ctx, d, all, claims); err != nil {
		return in, err
	}
	// New nodes attach as many volumes as the CSINodes of the cluster's nodes of their type report.
	learned, copies := learnedVolumeLimits(in.Nodes), map[*cloudprovider.InstanceType]*cloudprovider.InstanceType{}
	for i := range in.NodePools {
		o := &in.NodePools[i]
		o.InstanceTypes = withLearnedVolumeLimits(o.InstanceTypes, learned, copies)
		typesByPool[o.NodePool.Name] = o.InstanceTypes
	}
	written := writtenByRegistration(in.Nodes)
	if len(written) > 0 {
		unlabeled := 0
		for _, n := range written {
			if n.Node.Labels[karpv1.NodeRegisteredLabelKey] != "true" {
				unlabeled++
			}
		}
		logger.V(1).Info("nodes standing for nodeclaims whose registration the cache does not show yet", "nodes", len(written), "without-registered-label", unlabeled)
	}
	// podsOn are the pods each registered in-flight NodeClaim's node runs, made at the first that needs them.
	var podsOn map[string][]*corev1.Pod
	for i := range claims {
		nc := &claims[i]
		if node, ok := written[nc.Name]; ok {
			// Registration wrote the Node (labels, unregistered taint lifted) and the kube-scheduler may have bound
			// pods there already, but the cache does not show the NodeClaim's status.nodeName yet: the Node stands
			// for it from now on, with its pods (their room and their topology), as it will once the cache
			// catches up. A copy: the caller's NodeClaims and the cache's are left as they are.
			registered := *nc
			registered.Status.NodeName = node.Node.Name
			nc = &registered
			node.NodeClaim = nc
		}
		// Initialized NodeClaims stay in: until the kube-scheduler binds the pods meant for them, they must not
		// be provisioned for again.
		if !nc.DeletionTimestamp.IsZero() {
			continue
		}
		its, ok := typesByPool[nc.NodePoolName()]
		if !ok {
			continue
		}
		if podsOn == nil {
			podsOn = realPodsByNode(all)
		}
		f := inFlight(nc, its, allocatable, podsOn[nc.Status.NodeName])
		if f != nil {
			in.InFlight = append(in.InFlight, *f)
		}
	}
	sort.Slice(in.InFlight, func(i, j int) bool { return in.InFlight[i].NodeClaim.Name < in.InFlight[j].NodeClaim.Name })
	// The volumes of the pods bound to a node with attach limits count against them: their claims are read too.
	volumePods = append(slices.Clip(volumePods), boundWithClaims(in.Nodes)...)
	if err := volumesAndDaemonSets(ctx, d, &in, volumePods); err != nil {
		return in, err
	}
	if d.Settings != nil && len(d.Settings.DefaultSpreadConstraints) > 0 {
		in.DefaultSpread = d.Settings.DefaultSpreadConstraints
		if in.SpreadSelectors, err = spreadSelectors(ctx, d, append(slices.Clip(in.Pods), volumePods...)); err != nil {
			return in, err
		}
	}
	if d.DeviceModels != nil {
		if in.DRA, in.DRAProblem, err = draInput(ctx, d); err != nil {
			return in, err
		}
	}
	return in, nil
}

// nodes returns every Node with the (non-terminal) pods bound to it and the NodeClaim that launched it, by name.
func nodes(ctx context.Context, d deps.Deps, pods []*corev1.Pod, claims []karpv1.NodeClaim) ([]solver.ExistingNode, error) {
	nodeList := &corev1.NodeList{}
	// Read only (see the provisioning controller's snapshot): the cache's objects, not copies.
	if err := d.Client.List(ctx, nodeList, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	bound := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		bound[p.Spec.NodeName] = append(bound[p.Spec.NodeName], p)
	}
	byProviderID := map[string]*karpv1.NodeClaim{}
	for i := range claims {
		if id := claims[i].Status.ProviderID; id != "" {
			byProviderID[id] = &claims[i]
		}
	}
	limits, err := volumeLimits(ctx, d)
	if err != nil {
		return nil, err
	}
	out := make([]solver.ExistingNode, 0, len(nodeList.Items))
	for i := range nodeList.Items {
		n := &nodeList.Items[i]
		out = append(out, solver.ExistingNode{Node: n, Pods: bound[n.Name], NodeClaim: byProviderID[n.Spec.ProviderID], VolumeLimits: limits[n.Name]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node.Name < out[j].Node.Name })
	return out, nil
}

// writtenByRegistration returns the Nodes (by their NodeClaim's name) whose registration has written the Node
// while their NodeClaim does not show status.nodeName yet: registration writes the Node first, and the
// kube-scheduler binds pods to it in between. A Node shows it with karpenter.sh/registered=true, or with a pod
// other than a DaemonSet's bound to it (only registration lifts the unregistered taint that keeps such pods off;
// the cache may show the binding before the Node's update).
func writtenByRegistration(nodes []solver.ExistingNode) map[string]*solver.ExistingNode {
	out := map[string]*solver.ExistingNode{}
	for i := range nodes {
		n := &nodes[i]
		if n.NodeClaim == nil || n.NodeClaim.Status.NodeName != "" {
			continue
		}
		if n.Node.Labels[karpv1.NodeRegisteredLabelKey] == "true" || slices.ContainsFunc(n.Pods, func(p *corev1.Pod) bool { return !OwnedByDaemonSet(p) }) {
			out[n.NodeClaim.Name] = n
		}
	}
	return out
}

// volumesAndDaemonSets adds the DaemonSets (overhead on new nodes) and the volume objects the pending pods use.
func volumesAndDaemonSets(ctx context.Context, d deps.Deps, in *solver.Input, volumePods []*corev1.Pod) error {
	// The cache's objects, read only: the same pointers from one pass to the next while unchanged, which lets the
	// provisioner's scheduling memo (keyed by the DaemonSets among others) last from pass to pass.
	dsList := &appsv1.DaemonSetList{}
	if err := d.Client.List(ctx, dsList, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing daemonsets: %w", err)
	}
	for i := range dsList.Items {
		in.DaemonSets = append(in.DaemonSets, &dsList.Items[i])
	}
	claims := map[string]bool{}
	for _, p := range volumePods {
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				claims[p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName] = true
			}
		}
	}
	if len(claims) == 0 {
		return nil
	}
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := d.Client.List(ctx, pvcs); err != nil {
		return fmt.Errorf("listing persistent volume claims: %w", err)
	}
	volumes := map[string]bool{}
	classes := map[string]bool{}
	for i := range pvcs.Items {
		pvc := &pvcs.Items[i]
		if !claims[pvc.Namespace+"/"+pvc.Name] {
			continue
		}
		in.PersistentVolumeClaims = append(in.PersistentVolumeClaims, pvc)
		if pvc.Spec.VolumeName != "" {
			volumes[pvc.Spec.VolumeName] = true
		}
		if pvc.Spec.StorageClassName != nil {
			classes[*pvc.Spec.StorageClassName] = true
		}
	}
	for name := range volumes {
		pv := &corev1.PersistentVolume{}
		if err := d.Client.Get(ctx, client.ObjectKey{Name: name}, pv); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("getting persistent volume %s: %w", name, err)
			}
			continue
		}
		in.PersistentVolumes = append(in.PersistentVolumes, pv)
	}
	for name := range classes {
		sc := &storagev1.StorageClass{}
		if err := d.Client.Get(ctx, client.ObjectKey{Name: name}, sc); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("getting storage class %s: %w", name, err)
			}
			continue
		}
		in.StorageClasses = append(in.StorageClasses, sc)
	}
	sort.Slice(in.PersistentVolumes, func(i, j int) bool { return in.PersistentVolumes[i].Name < in.PersistentVolumes[j].Name })
	sort.Slice(in.StorageClasses, func(i, j int) bool { return in.StorageClasses[i].Name < in.StorageClasses[j].Name })
	return nil
}

// inFlight describes a NodeClaim: its expected labels and the room left on it. allocatable memoizes the
// instance types' allocatable (see minAllocatable).
func inFlight(nc *karpv1.NodeClaim, its []*cloudprovider.InstanceType, allocatable *allocatableMemo, podsOn []*corev1.Pod) *solver.InFlightClaim {
	labels := map[string]string{}
	for _, r := range nc.Spec.Requirements {
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			labels[r.Key] = r.Values[0]
		}
	}
	for k, v := range nc.Labels {
		labels[k] = v
	}
	available := nc.Status.Allocatable
	if available == nil {
		available = allocatable.least(nc, its)
		if available == nil {
			return nil
		}
	}
	// A list of its own, the pods' requests taken from it in place (no list a pod).
	available = solver.Sum(available)
	if nc.Status.NodeName != "" {
		for _, p := range podsOn {
			solver.SubtractPodRequests(available, p)
		}
	}
	return &solver.InFlightClaim{NodeClaim: nc, Labels: labels, Taints: nc.Spec.Taints, Available: available}
}

// realPodsByNode returns the pods of all bound to each node that are not terminal, without the virtual pods of
// CapacityBuffers: what an in-flight NodeClaim's registered node already runs. One walk of the pods a pass
// already holds, where listing each node's pods from the cache (by index) copied every pod of the cluster on
// every pass, one list per NodeClaim (5,000 lists at 5,000 nodes).
func realPodsByNode(all []*corev1.Pod) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for _, p := range all {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed ||
			p.Annotations[capacitybuffer.VirtualPodAnnotation] == "true" {
			continue
		}
		out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p)
	}
	return out
}

// allocatableMemo keeps, for one pass, each instance type's allocatable and the least allocatable of each set of
// requirements in a NodePool. Its lists are only read.
type allocatableMemo struct {
	byType         map[*cloudprovider.InstanceType]corev1.ResourceList
	byRequirements map[string]corev1.ResourceList
}

// least is minAllocatable of the NodeClaim, worked out once for each NodePool and set of requirements.
func (m *allocatableMemo) least(nc *karpv1.NodeClaim, its []*cloudprovider.InstanceType) corev1.ResourceList {
	var b strings.Builder
	b.WriteString(nc.NodePoolName())
	for _, r := range nc.Spec.Requirements {
		b.WriteByte(0)
		b.WriteString(r.Key)
		b.WriteByte(1)
		b.WriteString(string(r.Operator))
		for _, v := range r.Values {
			b.WriteByte(2)
			b.WriteString(v)
		}
	}
	key := b.String()
	if out, ok := m.byRequirements[key]; ok {
		return out
	}
	out := minAllocatable(nc, its, m.byType)
	m.byRequirements[key] = out
	return out
}

// minAllocatable is the element-wise minimum allocatable over the instance types the NodeClaim allows: what it
// will offer whichever type the cloud picks. memo holds each type's allocatable once computed (nil: none kept);
// its lists are only read.
func minAllocatable(nc *karpv1.NodeClaim, its []*cloudprovider.InstanceType, memo map[*cloudprovider.InstanceType]corev1.ResourceList) corev1.ResourceList {
	reqs := karpv1.NodeSelectorRequirements(nc.Spec.Requirements)
	var out corev1.ResourceList
	for _, it := range its {
		if !requirements.Allows(reqs, corev1.LabelInstanceTypeStable, it.Name) || !typeLabelsAllowed(it, reqs) {
			continue
		}
		a, ok := memo[it]
		if !ok {
			a = it.Allocatable()
			if memo != nil {
				memo[it] = a
			}
		}
		if out == nil {
			out = maps.Clone(a)
			continue
		}
		for name, q := range out {
			if v, ok := a[name]; !ok {
				delete(out, name)
			} else if v.Cmp(q) < 0 {
				out[name] = v
			}
		}
	}
	return out
}

// typeLabelsAllowed reports whether the requirements allow the instance type's labels. Requirements on keys the
// type has no label for are skipped: erring towards more types only lowers minAllocatable.
func typeLabelsAllowed(it *cloudprovider.InstanceType, reqs []corev1.NodeSelectorRequirement) bool {
	return requirements.Matches(reqs, it.Labels, func(key string) bool { _, ok := it.Labels[key]; return ok })
}

// volumeLimits returns, by node name, the attach limits each CSINode reports per driver (drivers without an
// allocatable count are not limited), as the kube-scheduler's NodeVolumeLimits reads them.
func volumeLimits(ctx context.Context, d deps.Deps) (map[string]map[string]int, error) {
	list := &storagev1.CSINodeList{}
	// Read only: the counts are copied out.
	if err := d.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing csinodes: %w", err)
	}
	out := map[string]map[string]int{}
	for i := range list.Items {
		cn := &list.Items[i]
		for _, drv := range cn.Spec.Drivers {
			if drv.Allocatable == nil || drv.Allocatable.Count == nil {
				continue
			}
			if out[cn.Name] == nil {
				out[cn.Name] = map[string]int{}
			}
			out[cn.Name][drv.Name] = int(*drv.Allocatable.Count)
		}
	}
	return out, nil
}

// OwnedByDaemonSet reports whether a DaemonSet owns the pod.
func OwnedByDaemonSet(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}
