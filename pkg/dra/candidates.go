package dra

import (
	"context"
	"sync"

	celgo "github.com/google/cel-go/cel"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// The structured allocator evaluates the CEL selectors of a request's DeviceClass and of the request itself on each
// device it looks at, and remembers the answers only for the length of one Allocate call. Fit allocates the same
// claims again and again on one node, and a solve fits many claim shapes on the same devices, so most of a solve's
// time went to evaluating the same selector on the same device. The allocator therefore gets only the devices that
// could serve some request of the claims as free, decided with each selector evaluated once per Allocator on each
// device, or on each set of device values it reads (projection.go).
//
// The allocator checks whether a device is taken before it evaluates selectors, so a device handed to it as taken
// costs nothing. Treating as taken a device whose selectors reject it for every request of the claims does not
// change what the allocator decides: it would never allocate that device. Devices on which a selector cannot be
// evaluated are left to the allocator, which reports the error if it reaches them, as it would have. Requests for
// all devices of a class still evaluate each device once per Allocate call.

// outcome is what one selector says about one device.
type outcome uint8

const (
	outcomeMatch outcome = iota + 1
	outcomeNoMatch
	outcomeUnknown // compile or runtime error: the allocator decides (and reports it)
)

// selectorKey is one (selector, device) pair: the device by its address in a slice the Allocator was handed (those
// slices are never modified), the selector by its number in the memo.
type selectorKey struct {
	device *resourcev1.Device
	expr   int
}

// projectedKey is one selector on the values it reads from a device (see projection.go).
type projectedKey struct {
	expr   int
	values string
}

// selectorMemo remembers selector outcomes for the lifetime of one Allocator: per projection of the device for
// the expressions that read named values only, per device for the others.
type selectorMemo struct {
	mu        sync.Mutex
	exprs     map[string]int
	refs      [][]deviceRef // by expression number; nil: evaluated per device
	results   map[selectorKey]outcome
	projected map[projectedKey]outcome
	formed    map[*resourcev1.Device]bool
	parser    *celgo.Env
	// hits and misses count lookups, for tests.
	hits, misses int
}

func newSelectorMemo() *selectorMemo {
	return &selectorMemo{exprs: map[string]int{}, results: map[selectorKey]outcome{}, projected: map[projectedKey]outcome{},
		formed: map[*resourcev1.Device]bool{}}
}

// exprID numbers an expression and finds the values it reads; the caller holds mu.
func (m *selectorMemo) exprID(expression string) int {
	id, ok := m.exprs[expression]
	if ok {
		return id
	}
	id = len(m.exprs)
	m.exprs[expression] = id
	var refs []deviceRef
	if m.parser == nil {
		m.parser, _ = celgo.NewEnv()
	}
	if m.parser != nil {
		if r, ok := selectorRefs(m.parser, expression); ok {
			refs = append([]deviceRef{}, r...) // not nil: projectable, even when it reads nothing
		}
	}
	m.refs = append(m.refs, refs)
	return id
}

// requestSelectors is what a device must satisfy for one request or subrequest: its class's selectors and its own.
type requestSelectors struct {
	exprs []string
	ids   []int
}

// claimSelectors lists the selectors of every request and subrequest of the claims. ok is false when a request
// cannot be judged here (an unknown DeviceClass, a selector that is not CEL, a request of no known kind): then no
// device may be left out, and the allocator reports what it finds.
func (a *Allocator) claimSelectors(claims []*resourcev1.ResourceClaim) (out []requestSelectors, ok bool) {
	add := func(className string, selectors []resourcev1.DeviceSelector) bool {
		class, found := a.classes.byName[className]
		if !found {
			return false
		}
		var r requestSelectors
		for _, list := range [][]resourcev1.DeviceSelector{class.Spec.Selectors, selectors} {
			for _, s := range list {
				if s.CEL == nil {
					return false
				}
				r.exprs = append(r.exprs, s.CEL.Expression)
			}
		}
		out = append(out, r)
		return true
	}
	for _, c := range claims {
		for i := range c.Spec.Devices.Requests {
			req := &c.Spec.Devices.Requests[i]
			if req.Exactly == nil && len(req.FirstAvailable) == 0 {
				return nil, false
			}
			if req.Exactly != nil && !add(req.Exactly.DeviceClassName, req.Exactly.Selectors) {
				return nil, false
			}
			for j := range req.FirstAvailable {
				if !add(req.FirstAvailable[j].DeviceClassName, req.FirstAvailable[j].Selectors) {
					return nil, false
				}
			}
		}
	}
	return out, true
}

// narrow returns the node's slices as the allocator is to see them for these claims, and the devices it is to treat
// as taken: those no request of the claims can use (see the comment at the top of this file). Such a device keeps
// its place in its slice (the allocator addresses devices by index) but loses its counter consumption, as taken
// devices' consumption is subtracted from their pool's counters and these devices consume nothing. Slices that lose
// nothing are passed on as they are.
func (n *Node) narrow(ctx context.Context, claims []*resourcev1.ResourceClaim) ([]*resourcev1.ResourceSlice, []structured.DeviceID) {
	requests, ok := n.a.claimSelectors(claims)
	if !ok || len(n.slices) == 0 {
		return n.slices, nil
	}
	m := n.a.memo
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range requests {
		for _, e := range requests[i].exprs {
			requests[i].ids = append(requests[i].ids, m.exprID(e))
		}
	}
	var excluded []structured.DeviceID
	out := make([]*resourcev1.ResourceSlice, len(n.slices))
	for si, s := range n.slices {
		out[si] = s
		var stripped *resourcev1.ResourceSlice
		for di := range s.Spec.Devices {
			d := &s.Spec.Devices[di]
			id := structured.MakeDeviceID(s.Spec.Driver, s.Spec.Pool.Name, d.Name)
			if n.state.AllocatedDevices.Has(id) || n.a.anyRequestMatches(ctx, m, requests, s.Spec.Driver, d) {
				continue
			}
			excluded = append(excluded, id)
			if len(d.ConsumesCounters) == 0 {
				continue
			}
			if stripped == nil {
				c := *s
				c.Spec.Devices = append([]resourcev1.Device(nil), s.Spec.Devices...)
				stripped = &c
				out[si] = stripped
			}
			stripped.Spec.Devices[di].ConsumesCounters = nil
		}
	}
	return out, excluded
}

// anyRequestMatches reports whether the device satisfies every selector of at least one request, or some selector
// cannot be evaluated on it. The caller holds m.mu.
func (a *Allocator) anyRequestMatches(ctx context.Context, m *selectorMemo, requests []requestSelectors, driver string, d *resourcev1.Device) bool {
	for _, r := range requests {
		match := true
		for i, id := range r.ids {
			o := a.selectorOutcome(ctx, m, r.exprs[i], id, driver, d)
			if o == outcomeUnknown {
				return true
			}
			if o == outcomeNoMatch {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// selectorOutcome evaluates one selector on one device, once per Allocator. The caller holds m.mu.
func (a *Allocator) selectorOutcome(ctx context.Context, m *selectorMemo, expression string, id int, driver string, d *resourcev1.Device) outcome {
	var pkey projectedKey
	projected := false
	if refs := m.refs[id]; refs != nil {
		formed, seen := m.formed[d]
		if !seen {
			formed = wellFormed(driver, d)
			m.formed[d] = formed
		}
		if formed {
			pkey, projected = projectedKey{expr: id, values: project(refs, driver, d)}, true
			if o, ok := m.projected[pkey]; ok {
				m.hits++
				return o
			}
		}
	}
	key := selectorKey{device: d, expr: id}
	if !projected {
		if o, ok := m.results[key]; ok {
			m.hits++
			return o
		}
	}
	m.misses++
	o := outcomeUnknown
	if expr := a.cache.GetOrCompile(expression); expr.Error == nil {
		matches, _, err := expr.DeviceMatches(ctx, cel.Device{Driver: driver, AllowMultipleAllocations: d.AllowMultipleAllocations,
			Attributes: d.Attributes, Capacity: d.Capacity})
		switch {
		case err != nil:
		case matches:
			o = outcomeMatch
		default:
			o = outcomeNoMatch
		}
	}
	if projected {
		m.projected[pkey] = o
	} else {
		m.results[key] = o
	}
	return o
}
