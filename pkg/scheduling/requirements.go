package scheduling

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// Requirement is the set of values a label key may take, the result of intersecting node selector requirements
// (In, NotIn, Exists, DoesNotExist, Gt, Lt). A requirement is either a finite set of allowed values or, when
// complement is set, every value except a finite set; numeric bounds further restrict values (which then must be
// integers). AllowAbsent says whether a node without the label satisfies it.
type Requirement struct {
	Key         string
	complement  bool
	values      []string // sorted, unique
	greater     *int64   // exclusive lower bound
	less        *int64   // exclusive upper bound
	AllowAbsent bool
	// MinValues is the NodePool's minimum number of distinct values the launch options must keep for this key.
	MinValues *int
}

// NewRequirement builds a Requirement from one node selector requirement; it rejects malformed ones with an error
// naming the key.
func NewRequirement(key string, op corev1.NodeSelectorOperator, values ...string) (*Requirement, error) {
	r := &Requirement{Key: key}
	switch op {
	case corev1.NodeSelectorOpIn:
		r.values = uniqueSorted(values)
	case corev1.NodeSelectorOpNotIn:
		r.complement, r.values, r.AllowAbsent = true, uniqueSorted(values), true
	case corev1.NodeSelectorOpExists:
		r.complement = true
	case corev1.NodeSelectorOpDoesNotExist:
		r.AllowAbsent = true
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, karpv1.NodeSelectorOpGte, karpv1.NodeSelectorOpLte:
		if len(values) != 1 {
			return nil, fmt.Errorf("requirement %s %s: needs exactly one value, got %d", key, op, len(values))
		}
		v, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("requirement %s %s: value %q is not an integer", key, op, values[0])
		}
		r.complement = true
		// Bounds are kept exclusive; on integers Gte v is Gt v-1 and Lte v is Lt v+1.
		switch op {
		case corev1.NodeSelectorOpGt:
			r.greater = &v
		case karpv1.NodeSelectorOpGte:
			if v == math.MinInt64 {
				return nil, fmt.Errorf("requirement %s %s: value %q is out of range", key, op, values[0])
			}
			g := v - 1
			r.greater = &g
		case karpv1.NodeSelectorOpLte:
			if v == math.MaxInt64 {
				return nil, fmt.Errorf("requirement %s %s: value %q is out of range", key, op, values[0])
			}
			l := v + 1
			r.less = &l
		default:
			r.less = &v
		}
	default:
		return nil, fmt.Errorf("requirement %s: unknown operator %q", key, op)
	}
	return r, nil
}

// In returns a requirement allowing exactly values.
func In(key string, values ...string) *Requirement {
	return &Requirement{Key: key, values: uniqueSorted(values)}
}

// Exists returns a requirement allowing any value but not absence.
func Exists(key string) *Requirement { return &Requirement{Key: key, complement: true} }

func uniqueSorted(values []string) []string {
	out := slices.Clone(values)
	sort.Strings(out)
	return slices.Compact(out)
}

// Copy returns a deep copy.
func (r *Requirement) Copy() *Requirement {
	c := *r
	c.values = slices.Clone(r.values)
	return &c
}

func (r *Requirement) inBounds(v string) bool {
	if r.greater == nil && r.less == nil {
		return true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return false
	}
	return (r.greater == nil || n > *r.greater) && (r.less == nil || n < *r.less)
}

// Has reports whether a node with label value v satisfies the requirement.
func (r *Requirement) Has(v string) bool {
	_, found := slices.BinarySearch(r.values, v)
	if r.complement == found {
		return false
	}
	return r.inBounds(v)
}

// Matches reports whether a node whose label is v (present says whether it has the label) satisfies r.
func (r *Requirement) Matches(v string, present bool) bool {
	if !present {
		return r.AllowAbsent
	}
	return r.Has(v)
}

// HasValues reports whether at least one label value satisfies the requirement.
func (r *Requirement) HasValues() bool {
	if !r.complement {
		for _, v := range r.values {
			if r.inBounds(v) {
				return true
			}
		}
		return false
	}
	if r.greater != nil && r.less != nil {
		return *r.less-*r.greater > 1 // a few excluded values could still empty it; good enough for labels
	}
	return true
}

// Satisfiable reports whether some node (with or without the label) satisfies r.
func (r *Requirement) Satisfiable() bool { return r.AllowAbsent || r.HasValues() }

// Values returns the finite allowed values (nil for a complement set).
func (r *Requirement) Values() []string {
	if r.complement {
		return nil
	}
	out := make([]string, 0, len(r.values))
	for _, v := range r.values {
		if r.inBounds(v) {
			out = append(out, v)
		}
	}
	return out
}

// Finite reports whether the allowed values are a finite list.
func (r *Requirement) Finite() bool { return !r.complement }

// Intersect returns the values both allow.
func (r *Requirement) Intersect(o *Requirement) *Requirement {
	out := &Requirement{Key: r.Key, AllowAbsent: r.AllowAbsent && o.AllowAbsent, MinValues: maxMin(r.MinValues, o.MinValues)}
	out.greater = maxPtr(r.greater, o.greater)
	out.less = minPtr(r.less, o.less)
	switch {
	case !r.complement && !o.complement:
		out.values = intersectSorted(r.values, o.values)
	case !r.complement && o.complement:
		out.values = subtractSorted(r.values, o.values)
	case r.complement && !o.complement:
		out.values = subtractSorted(o.values, r.values)
	default:
		out.complement = true
		out.values = uniqueSorted(append(slices.Clone(r.values), o.values...))
	}
	if !out.complement && (out.greater != nil || out.less != nil) {
		out.values = out.Values()
		out.greater, out.less = nil, nil
	}
	return out
}

// Equal reports whether both describe the same set.
func (r *Requirement) Equal(o *Requirement) bool {
	return r.complement == o.complement && r.AllowAbsent == o.AllowAbsent && slices.Equal(r.values, o.values) &&
		eqPtr(r.greater, o.greater) && eqPtr(r.less, o.less)
}

func (r *Requirement) String() string {
	var b strings.Builder
	b.WriteString(r.Key)
	switch {
	case !r.complement && len(r.values) == 0 && r.AllowAbsent:
		b.WriteString(" DoesNotExist")
	case !r.complement:
		fmt.Fprintf(&b, " In [%s]", strings.Join(r.values, ","))
	case len(r.values) > 0:
		fmt.Fprintf(&b, " NotIn [%s]", strings.Join(r.values, ","))
	case r.greater == nil && r.less == nil && !r.AllowAbsent:
		b.WriteString(" Exists")
	}
	if r.greater != nil {
		fmt.Fprintf(&b, " Gt %d", *r.greater)
	}
	if r.less != nil {
		fmt.Fprintf(&b, " Lt %d", *r.less)
	}
	return b.String()
}

// NodeSelectorRequirement converts r back to API form (bounds become Gt/Lt entries).
func (r *Requirement) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	var out []corev1.NodeSelectorRequirement
	switch {
	case !r.complement && len(r.values) == 0 && r.AllowAbsent:
		out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpDoesNotExist})
	case !r.complement:
		out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpIn, Values: slices.Clone(r.values)})
	case len(r.values) > 0:
		out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpNotIn, Values: slices.Clone(r.values)})
	case r.greater == nil && r.less == nil && !r.AllowAbsent:
		out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpExists})
	}
	if r.greater != nil {
		if *r.greater < 0 {
			// Gte 0 is kept as Gt -1; NodeClaim requirements take non-negative values only, so render it back as Gte.
			out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: karpv1.NodeSelectorOpGte, Values: []string{strconv.FormatInt(*r.greater+1, 10)}})
		} else {
			out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpGt, Values: []string{strconv.FormatInt(*r.greater, 10)}})
		}
	}
	if r.less != nil {
		out = append(out, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOpLt, Values: []string{strconv.FormatInt(*r.less, 10)}})
	}
	return out
}

func intersectSorted(a, b []string) []string {
	out := []string{}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, a[i])
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return out
}

func subtractSorted(a, b []string) []string {
	out := []string{}
	for _, v := range a {
		if _, found := slices.BinarySearch(b, v); !found {
			out = append(out, v)
		}
	}
	return out
}

func maxPtr(a, b *int64) *int64 {
	if a == nil {
		return b
	}
	if b == nil || *a > *b {
		return a
	}
	return b
}

func minPtr(a, b *int64) *int64 {
	if a == nil {
		return b
	}
	if b == nil || *a < *b {
		return a
	}
	return b
}

func maxMin(a, b *int) *int {
	if a == nil {
		return b
	}
	if b == nil || *a > *b {
		return a
	}
	return b
}

func eqPtr(a, b *int64) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }

// Requirements is a conjunction of requirements, one per key.
type Requirements map[string]*Requirement

// NewRequirements builds Requirements from node selector requirements (ANDed).
func NewRequirements(reqs ...corev1.NodeSelectorRequirement) (Requirements, error) {
	out := Requirements{}
	for _, nr := range reqs {
		r, err := NewRequirement(nr.Key, nr.Operator, nr.Values...)
		if err != nil {
			return nil, err
		}
		out.Add(r)
	}
	return out, nil
}

// LabelRequirements returns In requirements for every label.
func LabelRequirements(labels map[string]string) Requirements {
	out := Requirements{}
	for k, v := range labels {
		out[k] = In(k, v)
	}
	return out
}

// Add intersects r into the set.
func (rs Requirements) Add(r *Requirement) {
	if old, ok := rs[r.Key]; ok {
		rs[r.Key] = old.Intersect(r)
		return
	}
	rs[r.Key] = r
}

// Copy returns a copy whose requirements can be replaced independently (requirements themselves are immutable).
func (rs Requirements) Copy() Requirements {
	out := make(Requirements, len(rs))
	for k, v := range rs {
		out[k] = v
	}
	return out
}

// Keys returns the keys, sorted.
func (rs Requirements) Keys() []string {
	keys := make([]string, 0, len(rs))
	for k := range rs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Intersect returns the conjunction of both sets.
func (rs Requirements) Intersect(o Requirements) Requirements {
	out := rs.Copy()
	for _, r := range o {
		out.Add(r)
	}
	return out
}

// Conflict returns the first key (sorted) whose combined requirement no value or absence satisfies, or "".
func (rs Requirements) Conflict(o Requirements) string {
	keys := o.Keys()
	for _, k := range keys {
		if a, ok := rs[k]; ok && !a.Intersect(o[k]).Satisfiable() {
			return k
		}
	}
	return ""
}

// MatchesLabels reports whether a node with these labels satisfies every requirement.
func (rs Requirements) MatchesLabels(labels map[string]string) bool {
	for k, r := range rs {
		v, ok := labels[k]
		if !r.Matches(v, ok) {
			return false
		}
	}
	return true
}

// String renders the set in key order.
func (rs Requirements) String() string {
	parts := make([]string, 0, len(rs))
	for _, k := range rs.Keys() {
		parts = append(parts, rs[k].String())
	}
	return strings.Join(parts, ", ")
}

// NodeSelectorRequirements renders the set in API form, sorted by key.
func (rs Requirements) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	var out []corev1.NodeSelectorRequirement
	for _, k := range rs.Keys() {
		out = append(out, rs[k].NodeSelectorRequirements()...)
	}
	return out
}
