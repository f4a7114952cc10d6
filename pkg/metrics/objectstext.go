package metrics

import (
	"bufio"
	"slices"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The metrics of an objectFamily.
const (
	conditionCount = iota
	conditionCurrent
	terminationCurrent
)

// objectFamily is one family of ObjectConditions as WriteText writes it: its help, its label names in the
// exposition's (name) order, the kinds whose objects make its series and which of their gauges it is.
type objectFamily struct {
	help    string
	names   []string
	kinds   []ObjectKind
	metric  int
	generic bool
}

// objectFamilies returns ObjectConditions' families by name.
func objectFamilies() map[string]objectFamily {
	base := []string{LabelName, LabelNamespace, LabelConditionType, LabelConditionStatus, LabelReason}
	sorted := func(names ...[]string) []string {
		out := slices.Concat(names...)
		sort.Strings(out)
		return out
	}
	out := map[string]objectFamily{}
	var labelled []ObjectKind
	for k := range numObjectKinds {
		s := k.spec()
		extra := s.extraLabels()
		out[s.prefix()+"status_condition_count"] = objectFamily{help: "Current conditions of each " + s.kind + ", 1 a condition (type, status and reason).",
			names: sorted(base, extra), kinds: []ObjectKind{k}, metric: conditionCount}
		out[s.prefix()+"status_condition_current_status_seconds"] = objectFamily{help: "Time each " + s.kind + " condition has held its current status.",
			names: sorted(base, extra), kinds: []ObjectKind{k}, metric: conditionCurrent}
		out[s.prefix()+"termination_current_time_seconds"] = objectFamily{help: "Time since the deletion of each " + s.kind + " being deleted was requested.",
			names: sorted([]string{LabelName, LabelNamespace}, extra), kinds: []ObjectKind{k}, metric: terminationCurrent}
		if s.kindLabelled {
			labelled = append(labelled, k)
		}
	}
	kindBase := []string{LabelGroup, LabelKind}
	for name, metric := range map[string]int{"operator_status_condition_count": conditionCount,
		"operator_status_condition_current_status_seconds": conditionCurrent} {
		out[name] = objectFamily{help: helpOf(name), names: sorted(kindBase, base), kinds: labelled, metric: metric, generic: true}
	}
	out["operator_termination_current_time_seconds"] = objectFamily{help: helpOf("operator_termination_current_time_seconds"),
		names: sorted(kindBase, []string{LabelName, LabelNamespace}), kinds: labelled, metric: terminationCurrent, generic: true}
	return out
}

// TextFamilies are the names of the families WriteText writes, in name order: all of ObjectConditions'.
func (o *ObjectConditions) TextFamilies() []string {
	names := make([]string, 0, len(o.text))
	for name := range o.text {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// CollectOthers sends the series WriteText does not write: none.
func (o *ObjectConditions) CollectOthers(chan<- prometheus.Metric) {}

// objectSeries is one series of an objectFamily: its label values in the family's label order, and its value.
type objectSeries struct {
	values []string
	value  float64
}

// WriteText writes family (one of TextFamilies) as text exposition, the series as Collect makes them; nothing
// when it has no series. At 5,000 nodes the condition series are some 150,000 of up to 8 labels, which
// client_golang built as label pairs, checked, sorted and encoded at each scrape.
func (o *ObjectConditions) WriteText(w *bufio.Writer, family string) error {
	f, ok := o.text[family]
	if !ok {
		return nil
	}
	o.mu.Lock()
	listers := o.listers
	o.mu.Unlock()
	now := o.now()
	var series []objectSeries
	byName := map[string]string{}
	add := func(value float64) {
		values := make([]string, len(f.names))
		for i, n := range f.names {
			values[i] = byName[n]
		}
		series = append(series, objectSeries{values, value})
	}
	for _, k := range f.kinds {
		list := listers[k]
		if list == nil {
			continue
		}
		s := k.spec()
		extraNames := s.extraLabels()
		for _, obj := range list() {
			clear(byName)
			byName[LabelName], byName[LabelNamespace] = obj.Name, obj.Namespace
			if f.generic {
				byName[LabelGroup], byName[LabelKind] = s.group, s.kind
			} else {
				for i, v := range s.extraValues(obj.Labels) {
					byName[extraNames[i]] = v
				}
			}
			if f.metric == terminationCurrent {
				if !obj.DeletionTimestamp.IsZero() {
					add(now.Sub(obj.DeletionTimestamp).Seconds())
				}
				continue
			}
			for i, c := range obj.Conditions {
				if slices.ContainsFunc(obj.Conditions[:i], func(d metav1.Condition) bool { return d.Type == c.Type }) {
					continue
				}
				byName[LabelConditionType], byName[LabelConditionStatus], byName[LabelReason] = c.Type, string(c.Status), c.Reason
				if f.metric == conditionCount {
					add(1)
				} else {
					add(now.Sub(c.LastTransitionTime.Time).Seconds())
				}
			}
		}
	}
	if len(series) == 0 {
		return nil
	}
	// The exposition's order: by the label values in label name order.
	slices.SortFunc(series, func(a, b objectSeries) int { return slices.Compare(a.values, b.values) })
	t := &textWriter{w: w}
	t.header(family, f.help)
	for _, s := range series {
		t.str(family)
		for i, n := range f.names {
			sep := byte(',')
			if i == 0 {
				sep = '{'
			}
			t.label(sep, n, s.values[i])
		}
		t.byte('}')
		t.value(s.value)
	}
	return t.err
}
