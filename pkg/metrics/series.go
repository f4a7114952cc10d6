package metrics

import (
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Collect of the per-node and per-pod collectors (what a Gather of the registry, unlike the metrics handler, calls)
// hands the registry gauges whose label pairs are built for the scrape in label name order, each distinct value
// once: the registry neither builds nor sorts them. The families are the same as with prometheus.MustNewConstMetric.

// pairLayout is the label-pair order of a Desc's variable labels: the names in the Desc's order, and the Desc
// indices in the order the registry sorts the pairs (by name).
type pairLayout struct {
	names []string
	order []int
}

// newLayout returns the layout of labels named names (in the Desc's order).
func newLayout(names []string) pairLayout {
	l := pairLayout{names: append([]string(nil), names...), order: make([]int, len(names))}
	for i := range l.order {
		l.order[i] = i
	}
	sort.Slice(l.order, func(i, j int) bool { return l.names[l.order[i]] < l.names[l.order[j]] })
	return l
}

// sorted fills out with byIndex (a pair for each label, in the Desc's order) in name order and returns it.
func (l *pairLayout) sorted(out, byIndex []*dto.LabelPair) []*dto.LabelPair {
	for i, j := range l.order {
		out[i] = byIndex[j]
	}
	return out
}

// gaugeSeries is one gauge with prebuilt label pairs. A collector allocates a scrape's series in one slice.
type gaugeSeries struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	value  float64
	gauge  dto.Gauge
}

// Desc implements prometheus.Metric.
func (s *gaugeSeries) Desc() *prometheus.Desc { return s.desc }

// Write implements prometheus.Metric. The pairs are shared with later scrapes, as a vector's are: readers of a
// gathered family do not change them.
func (s *gaugeSeries) Write(m *dto.Metric) error {
	s.gauge.Value = &s.value
	m.Label = s.labels
	m.Gauge = &s.gauge
	return nil
}

// pairPool hands out the label pairs of one scrape: a pair for each distinct value of a label, shared by the series
// that have it, from slices allocated a chunk at a time.
type pairPool struct {
	names    []string
	slab     []dto.LabelPair
	interned []map[string]*dto.LabelPair
}

func newPairPool(l *pairLayout) *pairPool {
	return &pairPool{names: l.names, interned: make([]map[string]*dto.LabelPair, len(l.names))}
}

// at returns a new pair of the i-th label (in the Desc's order) with the value *v, which must not change while
// the pair is in use.
func (p *pairPool) at(i int, v *string) *dto.LabelPair {
	if len(p.slab) == 0 {
		p.slab = make([]dto.LabelPair, 1024)
	}
	pair := &p.slab[0]
	p.slab = p.slab[1:]
	pair.Name, pair.Value = &p.names[i], v
	return pair
}

// shared returns the pair of the i-th label with value v, the same for every call with that value.
func (p *pairPool) shared(i int, v string) *dto.LabelPair {
	m := p.interned[i]
	if m == nil {
		m = map[string]*dto.LabelPair{}
		p.interned[i] = m
	}
	if pair := m[v]; pair != nil {
		return pair
	}
	value := new(string)
	*value = v
	pair := p.at(i, value)
	m[v] = pair
	return pair
}
