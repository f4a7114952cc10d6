package overlay

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/requirements"
)

// ErrInvalid is wrapped by the runtime validation errors of an overlay.
var ErrInvalid = errors.New("invalid NodeOverlay")

// Order sorts overlays in the order they are applied: highest weight first (unset is 0) and, between equal
// weights, by name in reverse alphabetical order, as Karpenter orders them. It sorts in place.
func Order(overlays []karpv1alpha1.NodeOverlay) {
	sort.SliceStable(overlays, func(i, j int) bool {
		wi, wj := overlays[i].WeightOrZero(), overlays[j].WeightOrZero()
		if wi != wj {
			return wi > wj
		}
		return overlays[i].Name > overlays[j].Name
	})
}

// Validate checks what the CRD cannot: label values, the price expressions and capacity quantities as this
// package reads them. The error wraps ErrInvalid.
func Validate(o *karpv1alpha1.NodeOverlay) error {
	var problems []string
	for _, r := range o.Spec.Requirements {
		for _, msg := range validation.IsQualifiedName(r.Key) {
			problems = append(problems, fmt.Sprintf("key %q: %s", r.Key, msg))
		}
		for _, v := range r.Values {
			for _, msg := range validation.IsValidLabelValue(v) {
				problems = append(problems, fmt.Sprintf("value %q of key %s: %s", v, r.Key, msg))
			}
		}
	}
	if p := priceExpr(o); p != "" {
		if _, err := AdjustPrice(1, p); err != nil {
			problems = append(problems, err.Error())
		}
	}
	for name := range o.Spec.Capacity {
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods:
			problems = append(problems, fmt.Sprintf("capacity cannot change %s", name))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w %s: %s", ErrInvalid, o.Name, strings.Join(problems, "; "))
	}
	return nil
}

// priceExpr is the overlay's price or priceAdjustment ("" when it sets neither).
func priceExpr(o *karpv1alpha1.NodeOverlay) string {
	if o.Spec.Price != nil {
		return *o.Spec.Price
	}
	if o.Spec.PriceAdjustment != nil {
		return *o.Spec.PriceAdjustment
	}
	return ""
}

// AdjustPrice applies a price expression to price: an unsigned number replaces it, a signed number is added
// to it, a signed percentage scales it. The result is never negative.
func AdjustPrice(price float64, expr string) (float64, error) {
	if expr == "" {
		return price, nil
	}
	signed := strings.HasPrefix(expr, "+") || strings.HasPrefix(expr, "-")
	pct := strings.HasSuffix(expr, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(expr, "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("price expression %q: %w", expr, err)
	}
	var out float64
	switch {
	case !signed && pct:
		return 0, fmt.Errorf("price expression %q: a percentage needs a sign", expr)
	case !signed:
		out = v
	case pct:
		out = price * (1 + v/100)
	default:
		out = price + v
	}
	return max(out, 0), nil
}

// PoolLabels are the labels a NodePool's nodes carry whatever their instance type: the template labels and
// karpenter.sh/nodepool. Overlay requirements on these keys select by NodePool.
func PoolLabels(np *karpv1.NodePool) map[string]string {
	out := map[string]string{}
	for k, v := range np.Spec.Template.Labels {
		out[k] = v
	}
	out[karpv1.NodePoolLabelKey] = np.Name
	return out
}

// offeringLabels are the labels a node of it launched from offering o in a pool with poolLabels carries.
func offeringLabels(poolLabels map[string]string, it *cloudprovider.InstanceType, o cloudprovider.Offering) map[string]string {
	out := make(map[string]string, len(it.Labels)+len(poolLabels)+4)
	for k, v := range poolLabels {
		out[k] = v
	}
	for k, v := range it.Labels {
		out[k] = v
	}
	if _, ok := out[corev1.LabelInstanceTypeStable]; !ok {
		out[corev1.LabelInstanceTypeStable] = it.Name
	}
	out[corev1.LabelTopologyZone] = o.Zone
	out[karpv1.CapacityTypeLabelKey] = o.CapacityType
	if o.ReservationID != "" {
		out[awsv1.LabelCapacityReservationID] = o.ReservationID
		out[awsv1.LabelCapacityReservationType] = o.ReservationType
		out[awsv1.LabelCapacityReservationInterruptible] = strconv.FormatBool(o.Interruptible)
	}
	return out
}

// matchedOfferings returns the indexes of it's offerings whose labels satisfy the overlay's requirements; none
// means the overlay does not select the instance type.
func matchedOfferings(reqs []corev1.NodeSelectorRequirement, poolLabels map[string]string, it *cloudprovider.InstanceType) []int {
	var out []int
	for i, o := range it.Offerings {
		if requirements.Matches(reqs, offeringLabels(poolLabels, it, o), nil) {
			out = append(out, i)
		}
	}
	return out
}

// Pool is one NodePool with the instance types its node class offers (before overlays).
type Pool struct {
	NodePool      *karpv1.NodePool
	InstanceTypes []*cloudprovider.InstanceType
}

// Verdict says why an overlay is not applied; the zero Verdict means it is.
type Verdict struct {
	// Reason is karpv1alpha1.ReasonConflict or ReasonRuntimeValidation.
	Reason  string
	Message string
}

// Applied reports whether the overlay is applied.
func (v Verdict) Applied() bool { return v.Reason == "" }

type offeringKey struct {
	pool, instanceType, zone, capacityType, reservation string
}

type typeKey struct{ pool, instanceType string }

type capacitySeen struct {
	weight    int32
	overlay   string
	resources corev1.ResourceList
}

// Evaluate decides which overlays apply, in the order Order gives, following Karpenter's rules: an overlay whose
// requirements fail runtime validation is not applied (RuntimeValidation); an overlay that sets the price of an
// offering whose price was last set by an overlay of the same weight, or a resource of an instance type whose
// last capacity overlay had the same weight and set that resource, conflicts and is not applied at all, in any
// NodePool (Conflict). It returns the applied overlays, ordered, and a verdict for every overlay by name.
func Evaluate(overlays []karpv1alpha1.NodeOverlay, pools []Pool) ([]karpv1alpha1.NodeOverlay, map[string]Verdict) {
	ordered := append([]karpv1alpha1.NodeOverlay(nil), overlays...)
	Order(ordered)
	verdicts := map[string]Verdict{}
	priceWeight := map[offeringKey]struct {
		weight  int32
		overlay string
	}{}
	capSeen := map[typeKey]capacitySeen{}
	var applied []karpv1alpha1.NodeOverlay
	for i := range ordered {
		o := &ordered[i]
		if err := Validate(o); err != nil {
			verdicts[o.Name] = Verdict{Reason: karpv1alpha1.ReasonRuntimeValidation, Message: err.Error()}
			continue
		}
		reqs := o.NodeSelectorRequirements()
		w := o.WeightOrZero()
		setsPrice := priceExpr(o) != ""
		var conflict string
		type hit struct {
			tk   typeKey
			offs []offeringKey
		}
		var hits []hit
	pools:
		for _, p := range pools {
			pl := PoolLabels(p.NodePool)
			for _, it := range p.InstanceTypes {
				idx := matchedOfferings(reqs, pl, it)
				if len(idx) == 0 {
					continue
				}
				h := hit{tk: typeKey{p.NodePool.Name, it.Name}}
				for _, j := range idx {
					of := it.Offerings[j]
					h.offs = append(h.offs, offeringKey{p.NodePool.Name, it.Name, of.Zone, of.CapacityType, of.ReservationID})
				}
				if setsPrice {
					for _, k := range h.offs {
						if prev, ok := priceWeight[k]; ok && prev.weight == w {
							conflict = fmt.Sprintf("overlay %s, of the same weight %d, already sets the price of %s (%s, %s) in NodePool %s",
								prev.overlay, w, it.Name, k.zone, k.capacityType, k.pool)
							break pools
						}
					}
				}
				if len(o.Spec.Capacity) > 0 {
					if prev, ok := capSeen[h.tk]; ok && prev.weight == w {
						for name := range o.Spec.Capacity {
							if _, dup := prev.resources[name]; dup {
								conflict = fmt.Sprintf("overlay %s, of the same weight %d, already sets %s of %s in NodePool %s",
									prev.overlay, w, name, it.Name, h.tk.pool)
								break pools
							}
						}
					}
				}
				hits = append(hits, h)
			}
		}
		if conflict != "" {
			verdicts[o.Name] = Verdict{Reason: karpv1alpha1.ReasonConflict, Message: conflict}
			continue
		}
		for _, h := range hits {
			if setsPrice {
				for _, k := range h.offs {
					priceWeight[k] = struct {
						weight  int32
						overlay string
					}{w, o.Name}
				}
			}
			if len(o.Spec.Capacity) > 0 {
				capSeen[h.tk] = capacitySeen{weight: w, overlay: o.Name, resources: o.Spec.Capacity}
			}
		}
		verdicts[o.Name] = Verdict{}
		applied = append(applied, *o)
	}
	return applied, verdicts
}

// Apply returns its with the applied overlays (ordered as Evaluate returns them) applied for a pool whose nodes
// carry poolLabels (PoolLabels). An offering's price comes from the first overlay that selects it and sets a
// price; each capacity resource from the first overlay that selects the instance type (any of its offerings)
// and sets it. Instance types no overlay changes are returned as they are; changed ones are copies, so the
// cloud provider's values are never modified.
func Apply(applied []karpv1alpha1.NodeOverlay, poolLabels map[string]string, its []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	if len(applied) == 0 {
		return its
	}
	type prepared struct {
		o    *karpv1alpha1.NodeOverlay
		reqs []corev1.NodeSelectorRequirement
		expr string
	}
	ps := make([]prepared, len(applied))
	for i := range applied {
		ps[i] = prepared{o: &applied[i], reqs: applied[i].NodeSelectorRequirements(), expr: priceExpr(&applied[i])}
	}
	out := make([]*cloudprovider.InstanceType, len(its))
	for i, it := range its {
		out[i] = it
		var cp *cloudprovider.InstanceType
		copyOnce := func() *cloudprovider.InstanceType {
			if cp == nil {
				c := *it
				c.Offerings = append([]cloudprovider.Offering(nil), it.Offerings...)
				c.Capacity = it.Capacity.DeepCopy()
				c.Overhead = cloudprovider.Overhead{KubeReserved: it.Overhead.KubeReserved.DeepCopy(),
					SystemReserved: it.Overhead.SystemReserved.DeepCopy(), EvictionThreshold: it.Overhead.EvictionThreshold.DeepCopy()}
				c.CapacityOverlays = map[corev1.ResourceName]string{}
				for k, v := range it.CapacityOverlays {
					c.CapacityOverlays[k] = v
				}
				cp = &c
			}
			return cp
		}
		priced := make([]bool, len(it.Offerings))
		for _, p := range ps {
			idx := matchedOfferings(p.reqs, poolLabels, it)
			if len(idx) == 0 {
				continue
			}
			if p.expr != "" {
				for _, j := range idx {
					if priced[j] {
						continue
					}
					priced[j] = true
					c := copyOnce()
					base := it.Offerings[j].Price
					price, err := AdjustPrice(base, p.expr)
					if err != nil {
						continue // Evaluate refuses overlays whose expression does not parse.
					}
					c.Offerings[j].Price = price
					c.Offerings[j].PriceOverlay = p.o.Name
					c.Offerings[j].CloudPrice = base
				}
			}
			for name, q := range p.o.Spec.Capacity {
				c := copyOnce()
				if _, done := c.CapacityOverlays[name]; done {
					continue
				}
				c.CapacityOverlays[name] = p.o.Name
				c.Capacity[name] = q.DeepCopy()
				if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
					// Hugepages come out of the memory pods may use.
					if c.Overhead.SystemReserved == nil {
						c.Overhead.SystemReserved = corev1.ResourceList{}
					}
					m := c.Overhead.SystemReserved[corev1.ResourceMemory]
					m.Add(q)
					c.Overhead.SystemReserved[corev1.ResourceMemory] = m
				}
			}
		}
		if cp != nil {
			if len(cp.CapacityOverlays) == 0 {
				cp.CapacityOverlays = nil
			}
			out[i] = cp
		}
	}
	return out
}
