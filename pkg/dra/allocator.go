package dra

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// features are the DRA features the allocator honours: prioritized alternatives (firstAvailable), partitionable
// devices (shared counters) and consumable capacity. Admin access, device taints and binding conditions are not
// modelled.
var features = structured.Features{PrioritizedList: true, PartitionableDevices: true, ConsumableCapacity: true}

// Allocator allocates claims against DeviceClasses. It is safe for concurrent use; its CEL cache and the selector
// outcomes it remembers per device (see candidates.go) are shared by every node it makes.
type Allocator struct {
	classes classLister
	cache   *cel.Cache
	memo    *selectorMemo
}

// NewAllocator returns an allocator over the given DeviceClasses.
func NewAllocator(classes []*resourcev1.DeviceClass) *Allocator {
	l := classLister{byName: make(map[string]*resourcev1.DeviceClass, len(classes))}
	for _, c := range classes {
		if c != nil {
			l.byName[c.Name] = c
		}
	}
	return &Allocator{classes: l, cache: cel.NewCache(1000, cel.Features{EnableConsumableCapacity: true}), memo: newSelectorMemo()}
}

type classLister struct {
	byName map[string]*resourcev1.DeviceClass
}

func (l classLister) List() ([]*resourcev1.DeviceClass, error) {
	out := make([]*resourcev1.DeviceClass, 0, len(l.byName))
	for _, c := range l.byName {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (l classLister) Get(name string) (*resourcev1.DeviceClass, error) {
	if c, ok := l.byName[name]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(resourcev1.Resource("deviceclasses"), name)
}

// Class returns the named DeviceClass.
func (a *Allocator) Class(name string) (*resourcev1.DeviceClass, bool) {
	c, ok := a.classes.byName[name]
	return c, ok
}

// Node is the devices of one node and what is already allocated on them. It is not safe for concurrent use.
type Node struct {
	a      *Allocator
	node   *corev1.Node
	slices []*resourcev1.ResourceSlice
	pools  sets.Set[string]
	state  structured.AllocatedState
}

// Node returns the node named name, with the given labels, carrying slices (slices for other nodes are kept: the
// allocator ignores them unless they are network-wide and select the node).
func (a *Allocator) Node(name string, labels map[string]string, slices []*resourcev1.ResourceSlice) *Node {
	n := &Node{a: a, node: &corev1.Node{}, slices: slices, pools: sets.New[string]()}
	n.node.Name = name
	n.node.Labels = labels
	for _, s := range slices {
		n.pools.Insert(s.Spec.Driver + "/" + s.Spec.Pool.Name)
	}
	n.state = structured.AllocatedState{AllocatedDevices: sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](), AggregatedCapacity: structured.NewConsumedCapacityCollection()}
	return n
}

// Empty reports whether the node has no devices.
func (n *Node) Empty() bool { return len(n.slices) == 0 }

// Reserve records devices already allocated to claims; results on pools the node does not carry are skipped.
func (n *Node) Reserve(results []resourcev1.DeviceRequestAllocationResult) {
	for _, r := range results {
		if !n.pools.Has(r.Driver + "/" + r.Pool) {
			continue
		}
		id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
		if r.ShareID == nil {
			n.state.AllocatedDevices.Insert(id)
			continue
		}
		n.state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
		if len(r.ConsumedCapacity) > 0 {
			n.state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
		}
	}
}

// Clone returns an independent copy of the node's allocation state.
func (n *Node) Clone() *Node {
	c := *n
	c.state = structured.AllocatedState{AllocatedDevices: n.state.AllocatedDevices.Clone(),
		AllocatedSharedDeviceIDs: n.state.AllocatedSharedDeviceIDs.Clone(), AggregatedCapacity: n.state.AggregatedCapacity.Clone()}
	return &c
}

// Allocate allocates claims together on the node. On success it records their devices and returns one result per
// claim; when the claims do not fit it returns ok=false and changes nothing. err is for claims the allocator cannot
// evaluate (an unknown DeviceClass, a CEL expression failing at runtime).
func (n *Node) Allocate(ctx context.Context, claims []*resourcev1.ResourceClaim) (results []resourcev1.AllocationResult, ok bool, err error) {
	if len(claims) == 0 {
		return nil, true, nil
	}
	if len(n.slices) == 0 {
		return nil, false, nil
	}
	slices, excluded := n.narrow(ctx, claims)
	state := n.state
	if len(excluded) > 0 {
		state.AllocatedDevices = n.state.AllocatedDevices.Clone().Insert(excluded...)
	}
	return n.allocate(ctx, claims, state, slices)
}

// allocate is Allocate with the allocator's view of the node's devices given (see narrow).
func (n *Node) allocate(ctx context.Context, claims []*resourcev1.ResourceClaim, state structured.AllocatedState,
	slices []*resourcev1.ResourceSlice) (results []resourcev1.AllocationResult, ok bool, err error) {
	alloc, err := structured.NewAllocator(ctx, features, state, n.a.classes, slices, n.a.cache)
	if err != nil {
		return nil, false, fmt.Errorf("creating the structured allocator: %w", err)
	}
	results, err = alloc.Allocate(ctx, n.node, claims)
	if err != nil {
		return nil, false, fmt.Errorf("allocating devices on node %s: %w", n.node.Name, err)
	}
	if results == nil {
		return nil, false, nil
	}
	for _, r := range results {
		n.Reserve(r.Devices.Results)
	}
	return results, true, nil
}

// Fit returns how many times in a row the claims could be allocated on the node, up to max, each time on the
// devices the previous times left. The node is unchanged. Each round allocates copies of the claims, so claims that
// are meant to be allocated once (shared) must not be passed here.
func (n *Node) Fit(ctx context.Context, claims []*resourcev1.ResourceClaim, max int) (int, error) {
	if len(claims) == 0 {
		return max, nil
	}
	if len(n.slices) == 0 {
		return 0, nil
	}
	c := n.Clone()
	// The devices the rounds allocate are ones the claims can use, so the others are set aside once, on the copy.
	slices, excluded := c.narrow(ctx, claims)
	c.state.AllocatedDevices.Insert(excluded...)
	for k := 0; k < max; k++ {
		_, ok, err := c.allocate(ctx, claims, c.state, slices)
		if err != nil {
			return k, err
		}
		if !ok {
			return k, nil
		}
	}
	return max, nil
}
