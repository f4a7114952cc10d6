package oracle

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/dynamic-resource-allocation/structured"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/dovetail/dovetail/pkg/scheduling"
)

// draPluginName names the upstream DRA plugin in violations.
const draPluginName = dynamicresources.Name

// CheckDRA runs the kube-scheduler's DynamicResources plugin on the claim pods of a plan. Every node of the plan
// publishes ResourceSlices: an existing node those of snap.DRA.Slices, a planned NodeClaim those its instance type's
// device model gives (snap.DRA.Models). On each node the placed claim pods are scheduled one after another in the
// plan's order, each through PreFilter, Filter and Reserve, so the devices earlier pods' claims took are taken for
// the later ones, as when the kube-scheduler binds them in that order. A claim pod of plan.Unschedulable whose
// reason is its devices must be refused by the plugin on a new node of every instance type of its NodePools (alone,
// no other claim allocated there). It returns the violations sorted; the error is for a checker that could not run.
func CheckDRA(ctx context.Context, snap *scheduling.Snapshot, plan *scheduling.Plan) ([]Violation, error) {
	if snap.DRA == nil {
		return nil, nil
	}
	d := snap.DRA
	pods := map[types.NamespacedName]*corev1.Pod{}
	for _, p := range snap.Pods {
		if p != nil && len(p.Spec.ResourceClaims) > 0 {
			pods[types.NamespacedName{Namespace: p.Namespace, Name: p.Name}] = p
		}
	}
	var out []Violation
	// nodes, in a stable order, with their Node, their slices and their claim pods in the plan's order
	type planned struct {
		node   *corev1.Node
		slices []*resourcev1.ResourceSlice
		pods   []*corev1.Pod
	}
	var order []string
	byNode := map[string]*planned{}
	existing := map[string]*scheduling.StateNode{}
	for _, n := range snap.Nodes {
		if n != nil {
			existing[n.Name] = n
		}
	}
	for _, pl := range plan.Placements {
		p := pods[pl.Pod]
		if p == nil {
			continue
		}
		pn := byNode[pl.Node]
		if pn == nil {
			sn := existing[pl.Node]
			if sn == nil {
				out = append(out, Violation{Pod: pl.Pod.String(), Node: pl.Node, Plugin: "Plan", Message: "placed on a node the snapshot does not have"})
				continue
			}
			pn = &planned{node: draNode(pl.Node, sn.Labels)}
			if sn.InFlight {
				pn.slices = modelSlices(d, sn.Labels[corev1.LabelInstanceTypeStable], pl.Node)
			} else {
				for _, s := range d.Slices {
					if s != nil && s.Spec.NodeName != nil && *s.Spec.NodeName == pl.Node {
						pn.slices = append(pn.slices, s)
					}
				}
			}
			byNode[pl.Node] = pn
			order = append(order, pl.Node)
		}
		pn.pods = append(pn.pods, p)
	}
	for _, nc := range plan.NodeClaims {
		pn := &planned{node: draNode(nc.Name, map[string]string{corev1.LabelInstanceTypeStable: nc.InstanceType}),
			slices: modelSlices(d, nc.InstanceType, nc.Name)}
		for _, k := range nc.Pods {
			if p := pods[k]; p != nil {
				pn.pods = append(pn.pods, p)
			}
		}
		if len(pn.pods) > 0 {
			byNode[nc.Name] = pn
			order = append(order, nc.Name)
		}
	}

	// one tracker for the whole cluster: the claims already allocated, then those the checks reserve
	var slices []*resourcev1.ResourceSlice
	for _, name := range order {
		slices = append(slices, byNode[name].slices...)
	}
	m := newDRAManager(d.DeviceClasses, slices, d.Claims)
	pl, err := newDRAPlugin(ctx, m)
	if err != nil {
		return nil, err
	}
	for _, name := range order {
		pn := byNode[name]
		ni := framework.NewNodeInfo()
		ni.SetNode(pn.node)
		for _, p := range pn.pods {
			q := m.withClaims(p, d.ClaimTemplates)
			if msg := schedule(ctx, pl, q, ni, true); msg != "" {
				out = append(out, Violation{Pod: p.Namespace + "/" + p.Name, Node: name, Plugin: draPluginName, Message: msg})
			}
		}
	}

	// pods left unplaced for their devices: no instance type may take them
	for _, u := range plan.Unschedulable {
		p := pods[u.Pod]
		if p == nil || !strings.Contains(u.Reason, "devices for resource claims") || strings.Contains(u.Reason, "conflict with other claims") {
			continue
		}
		seen := map[string]bool{}
		for _, np := range snap.NodePools {
			for _, it := range snap.InstanceTypes[np.Name] {
				if it == nil || seen[it.Name] {
					continue
				}
				seen[it.Name] = true
				node := "dra-oracle-" + it.Name
				fresh := newDRAManager(d.DeviceClasses, modelSlices(d, it.Name, node), nil)
				fpl, err := newDRAPlugin(ctx, fresh)
				if err != nil {
					return nil, err
				}
				ni := framework.NewNodeInfo()
				ni.SetNode(draNode(node, map[string]string{corev1.LabelInstanceTypeStable: it.Name}))
				if schedule(ctx, fpl, fresh.withClaims(p, d.ClaimTemplates), ni, false) == "" {
					out = append(out, Violation{Pod: u.Pod.String(), Node: "new " + it.Name, Plugin: draPluginName,
						Message: "left unschedulable (" + u.Reason + "), but the plugin accepts it on a new node of this type"})
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

// schedule runs PreFilter and Filter of the plugin for the pod on the node, then Reserve when reserve is set; it
// returns "" when the pod passes, or what refused it.
func schedule(ctx context.Context, pl *dynamicresources.DynamicResources, pod *corev1.Pod, ni *framework.NodeInfo, reserve bool) string {
	state := framework.NewCycleState()
	_, st := pl.PreFilter(ctx, state, pod, []fwk.NodeInfo{ni})
	if st.IsSkip() {
		return ""
	}
	if !st.IsSuccess() {
		return "PreFilter: " + st.Message()
	}
	if st := pl.Filter(ctx, state, pod, ni); !st.IsSuccess() {
		return "Filter: " + st.Message()
	}
	if reserve {
		if st := pl.Reserve(ctx, state, pod, ni.Node().Name); !st.IsSuccess() {
			return "Reserve: " + st.Message()
		}
	}
	return ""
}

func draNode(name string, labels map[string]string) *corev1.Node {
	l := map[string]string{corev1.LabelHostname: name}
	for k, v := range labels {
		l[k] = v
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

func modelSlices(d *scheduling.DRA, instanceType, node string) []*resourcev1.ResourceSlice {
	if d.Models == nil || instanceType == "" {
		return nil
	}
	var out []*resourcev1.ResourceSlice
	for _, s := range d.Models.Slices(instanceType, node) {
		out = append(out, &s)
	}
	return out
}

// newDRAPlugin builds the upstream plugin with its default arguments on a framework handle whose DRA manager is m,
// with the features Dovetail's allocator honours (prioritized lists, partitionable devices, consumable capacity)
// and the filter timeout of a 1.34 kube-scheduler (its default arguments set one).
func newDRAPlugin(ctx context.Context, m *draManager) (*dynamicresources.DynamicResources, error) {
	metrics.Register()
	client := fake.NewClientset()
	h, err := frameworkruntime.NewFramework(ctx, nil, nil, frameworkruntime.WithClientSet(client),
		frameworkruntime.WithSharedDRAManager(m), frameworkruntime.WithParallelism(parallelism))
	if err != nil {
		return nil, fmt.Errorf("building the framework handle: %w", err)
	}
	v1 := &configv1.DynamicResourcesArgs{}
	scheme.Scheme.Default(v1)
	args, err := scheme.Scheme.ConvertToVersion(v1, config.SchemeGroupVersion)
	if err != nil {
		return nil, fmt.Errorf("converting %s args: %w", draPluginName, err)
	}
	fts := feature.Features{EnableDynamicResourceAllocation: true, EnableDRAPrioritizedList: true, EnablePartitionableDevices: true,
		EnableConsumableCapacity: true, EnableDRASchedulerFilterTimeout: true}
	p, err := dynamicresources.New(ctx, args, h, fts)
	if err != nil {
		return nil, fmt.Errorf("building plugin %s: %w", draPluginName, err)
	}
	return p.(*dynamicresources.DynamicResources), nil
}

// draManager is the DRA state the plugin reads, in memory: the classes, the slices, and the claims with the
// allocations Reserve signals (as a cluster autoscaler simulates binding).
type draManager struct {
	classes map[string]*resourcev1.DeviceClass
	slices  []*resourcev1.ResourceSlice
	claims  map[string]*resourcev1.ResourceClaim // by namespace/name
	pending map[types.UID]*resourcev1.ResourceClaim
}

func newDRAManager(classes []*resourcev1.DeviceClass, slices []*resourcev1.ResourceSlice, claims []*resourcev1.ResourceClaim) *draManager {
	m := &draManager{classes: map[string]*resourcev1.DeviceClass{}, slices: slices, claims: map[string]*resourcev1.ResourceClaim{},
		pending: map[types.UID]*resourcev1.ResourceClaim{}}
	for _, c := range classes {
		m.classes[c.Name] = c
	}
	for _, c := range claims {
		if c != nil {
			m.claims[c.Namespace+"/"+c.Name] = c
		}
	}
	return m
}

// withClaims returns a copy of the pod whose template claims exist as generated claims (created here when the
// snapshot has none for it), owned by the pod and named in its status, as the resource claim controller makes
// them before the kube-scheduler sees the pod.
func (m *draManager) withClaims(p *corev1.Pod, templates []*resourcev1.ResourceClaimTemplate) *corev1.Pod {
	q := p.DeepCopy()
	if q.UID == "" {
		q.UID = types.UID("uid-" + q.Namespace + "-" + q.Name)
	}
	generated := map[string]bool{}
	for _, st := range q.Status.ResourceClaimStatuses {
		if st.ResourceClaimName != nil && m.claims[q.Namespace+"/"+*st.ResourceClaimName] != nil {
			generated[st.Name] = true
		}
	}
	tmpl := map[string]*resourcev1.ResourceClaimTemplate{}
	for _, t := range templates {
		tmpl[t.Namespace+"/"+t.Name] = t
	}
	for _, pc := range q.Spec.ResourceClaims {
		if pc.ResourceClaimTemplateName == nil || generated[pc.Name] {
			continue
		}
		t := tmpl[q.Namespace+"/"+*pc.ResourceClaimTemplateName]
		if t == nil {
			continue // the plugin refuses the pod: its claim does not exist
		}
		name := q.Name + "-" + pc.Name
		c := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: q.Namespace, Name: name, UID: types.UID(string(q.UID) + "-" + pc.Name),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: q.Name, UID: q.UID, Controller: ptrTo(true)}}},
			Spec: *t.Spec.Spec.DeepCopy()}
		m.claims[q.Namespace+"/"+name] = c
		q.Status.ResourceClaimStatuses = append(q.Status.ResourceClaimStatuses, corev1.PodResourceClaimStatus{Name: pc.Name, ResourceClaimName: ptrTo(name)})
	}
	return q
}

func ptrTo[T any](v T) *T { return &v }

func (m *draManager) ResourceClaims() framework.ResourceClaimTracker { return m }
func (m *draManager) ResourceSlices() framework.ResourceSliceLister  { return m }
func (m *draManager) DeviceClasses() framework.DeviceClassLister     { return draClasses(m.classes) }

func (m *draManager) ListWithDeviceTaintRules() ([]*resourcev1.ResourceSlice, error) {
	return m.slices, nil
}

// claim returns the claim as the tracker shows it: with its pending allocation, if any.
func (m *draManager) claim(c *resourcev1.ResourceClaim) *resourcev1.ResourceClaim {
	if a, ok := m.pending[c.UID]; ok {
		return a
	}
	return c
}

func (m *draManager) List() ([]*resourcev1.ResourceClaim, error) {
	keys := make([]string, 0, len(m.claims))
	for k := range m.claims {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*resourcev1.ResourceClaim, 0, len(keys))
	for _, k := range keys {
		out = append(out, m.claim(m.claims[k]))
	}
	return out, nil
}

func (m *draManager) Get(namespace, name string) (*resourcev1.ResourceClaim, error) {
	c, ok := m.claims[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(resourcev1.Resource("resourceclaims"), name)
	}
	return m.claim(c), nil
}

func (m *draManager) ListAllAllocatedDevices() (sets.Set[structured.DeviceID], error) {
	st, err := m.GatherAllocatedState()
	if err != nil {
		return nil, err
	}
	return st.AllocatedDevices, nil
}

// GatherAllocatedState collects the devices of every allocated claim. Devices shared by consumable capacity count
// by share and capacity; the others are taken whole.
func (m *draManager) GatherAllocatedState() (*structured.AllocatedState, error) {
	st := &structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](), AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity: structured.NewConsumedCapacityCollection()}
	cs, _ := m.List()
	for _, c := range cs {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if r.ShareID == nil {
				st.AllocatedDevices.Insert(id)
				continue
			}
			st.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
			if r.ConsumedCapacity != nil {
				consumed := structured.ConsumedCapacity{}
				for name, q := range r.ConsumedCapacity {
					consumed[name] = &q
				}
				st.AggregatedCapacity.Insert(structured.DeviceConsumedCapacity{DeviceID: id, ConsumedCapacity: consumed})
			}
		}
	}
	return st, nil
}

func (m *draManager) SignalClaimPendingAllocation(uid types.UID, allocated *resourcev1.ResourceClaim) error {
	m.pending[uid] = allocated
	return nil
}

func (m *draManager) ClaimHasPendingAllocation(uid types.UID) bool {
	_, ok := m.pending[uid]
	return ok
}

// RemoveClaimPendingAllocation keeps the allocation: in the oracle a reserved claim stays allocated (the pod is
// bound), so a later pod never sees its devices free.
func (m *draManager) RemoveClaimPendingAllocation(uid types.UID) bool {
	_, ok := m.pending[uid]
	return ok
}

func (m *draManager) AssumeClaimAfterAPICall(c *resourcev1.ResourceClaim) error {
	m.claims[c.Namespace+"/"+c.Name] = c
	return nil
}

func (m *draManager) AssumedClaimRestore(string, string) {}

type draClasses map[string]*resourcev1.DeviceClass

func (c draClasses) List() ([]*resourcev1.DeviceClass, error) {
	out := make([]*resourcev1.DeviceClass, 0, len(c))
	for _, x := range c {
		out = append(out, x)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (c draClasses) Get(name string) (*resourcev1.DeviceClass, error) {
	if x, ok := c[name]; ok {
		return x, nil
	}
	return nil, apierrors.NewNotFound(resourcev1.Resource("deviceclasses"), name)
}
