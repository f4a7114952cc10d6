package metrics

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// ObjectKind is a kind whose status conditions and terminations are measured by the operator_<kind>_* metrics.
type ObjectKind int

// The measured kinds.
const (
	KindNodeClaim ObjectKind = iota
	KindNodePool
	KindNode
	KindEC2NodeClass
	numObjectKinds
)

// objectKindSpec says how a kind is labelled.
type objectKindSpec struct {
	group, kind string
	// labelKeys are the object labels copied onto the kind's series, each named as promLabel names it.
	labelKeys []string
	// kindLabelled: the kind also has the group- and kind-labelled operator_status_condition_* and
	// operator_termination_* series (the names of Karpenter v1.0, kept by v1.14 for NodeClaims, NodePools and
	// EC2NodeClasses).
	kindLabelled bool
}

func (k ObjectKind) spec() objectKindSpec {
	switch k {
	case KindNodeClaim:
		return objectKindSpec{karpv1.Group, "NodeClaim", []string{awsv1.LabelNodeClass, karpv1.NodePoolLabelKey}, true}
	case KindNodePool:
		return objectKindSpec{karpv1.Group, "NodePool", nil, true}
	case KindNode:
		return objectKindSpec{"", "Node", []string{awsv1.LabelNodeClass, karpv1.NodePoolLabelKey, karpv1.NodeInitializedLabelKey}, false}
	case KindEC2NodeClass:
		return objectKindSpec{awsv1.Group, "EC2NodeClass", nil, true}
	}
	panic("metrics: unknown object kind")
}

// prefix is the name prefix of the kind's metrics, e.g. operator_nodeclaim_.
func (s objectKindSpec) prefix() string { return "operator_" + strings.ToLower(s.kind) + "_" }

// extraLabels are the label names of the kind's object labels.
func (s objectKindSpec) extraLabels() []string {
	out := make([]string, 0, len(s.labelKeys))
	for _, k := range s.labelKeys {
		out = append(out, promLabel(k))
	}
	return out
}

// extraValues are the object's values of the kind's object labels ("" where it has none).
func (s objectKindSpec) extraValues(labels map[string]string) []string {
	out := make([]string, 0, len(s.labelKeys))
	for _, k := range s.labelKeys {
		out = append(out, labels[k])
	}
	return out
}

// promLabel is a label key as a metric label name: "/", "." and "-" become "_"
// (karpenter.sh/nodepool is karpenter_sh_nodepool).
func promLabel(key string) string {
	return strings.NewReplacer("/", "_", ".", "_", "-", "_").Replace(key)
}

// conditionBuckets span a condition's time in a status and an object's termination: 0.5 s doubling to 8192 s.
var conditionBuckets = prometheus.ExponentialBuckets(0.5, 2, 15)

// ConditionedObject is what the condition and termination gauges read of one object.
type ConditionedObject struct {
	Name, Namespace string
	// Labels are the object's labels (only the kind's copied labels are read).
	Labels     map[string]string
	Conditions []metav1.Condition
	// DeletionTimestamp is when the object's deletion was requested; zero when it is not being deleted.
	DeletionTimestamp time.Time
}

// ObjectLister lists the objects of a kind, from an informer cache; it is called at each scrape and must not
// block on the API server. The objects are read, not kept.
type ObjectLister func() []ConditionedObject

type kindGauges struct {
	count, current, terminating *prometheus.Desc
}

// ObjectConditions is the per-object condition and termination gauges of every kind
// (operator_<kind>_status_condition_count, _status_condition_current_status_seconds,
// operator_<kind>_termination_current_time_seconds and their kind-labelled operator_status_condition_* and
// operator_termination_current_time_seconds forms). They are made at each scrape from the objects the kinds'
// listers return, so a deleted object's series go with it and nothing is kept between scrapes.
type ObjectConditions struct {
	now     func() time.Time
	kinds   [numObjectKinds]kindGauges
	generic kindGauges
	mu      sync.Mutex
	listers [numObjectKinds]ObjectLister
	// text are the families by name, as WriteText writes them (objectstext.go).
	text map[string]objectFamily
}

// NewObjectConditions returns the collector without listers: it reports nothing until SetLister is called.
func NewObjectConditions(now func() time.Time) *ObjectConditions {
	o := &ObjectConditions{now: now, text: objectFamilies()}
	base := []string{LabelName, LabelNamespace, LabelConditionType, LabelConditionStatus, LabelReason}
	for k := range numObjectKinds {
		s := k.spec()
		extra := s.extraLabels()
		o.kinds[k] = kindGauges{
			count: prometheus.NewDesc(s.prefix()+"status_condition_count",
				"Current conditions of each "+s.kind+", 1 a condition (type, status and reason).",
				append(append([]string(nil), base...), extra...), nil),
			current: prometheus.NewDesc(s.prefix()+"status_condition_current_status_seconds",
				"Time each "+s.kind+" condition has held its current status.",
				append(append([]string(nil), base...), extra...), nil),
			terminating: prometheus.NewDesc(s.prefix()+"termination_current_time_seconds",
				"Time since the deletion of each "+s.kind+" being deleted was requested.",
				append([]string{LabelName, LabelNamespace}, extra...), nil),
		}
	}
	o.generic = kindGauges{
		count: prometheus.NewDesc("operator_status_condition_count",
			helpOf("operator_status_condition_count"), append([]string{LabelGroup, LabelKind}, base...), nil),
		current: prometheus.NewDesc("operator_status_condition_current_status_seconds",
			helpOf("operator_status_condition_current_status_seconds"), append([]string{LabelGroup, LabelKind}, base...), nil),
		terminating: prometheus.NewDesc("operator_termination_current_time_seconds",
			helpOf("operator_termination_current_time_seconds"), []string{LabelGroup, LabelKind, LabelName, LabelNamespace}, nil),
	}
	return o
}

// SetLister sets the lister of a kind (the operator sets one per kind once its caches exist).
func (o *ObjectConditions) SetLister(k ObjectKind, l ObjectLister) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.listers[k] = l
}

// Describe implements prometheus.Collector.
func (o *ObjectConditions) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range append(o.kinds[:], o.generic) {
		ch <- g.count
		ch <- g.current
		ch <- g.terminating
	}
}

// Collect implements prometheus.Collector.
func (o *ObjectConditions) Collect(ch chan<- prometheus.Metric) {
	o.mu.Lock()
	listers := o.listers
	o.mu.Unlock()
	now := o.now()
	for k, list := range listers {
		if list == nil {
			continue
		}
		kind := ObjectKind(k)
		s, g := kind.spec(), o.kinds[k]
		for _, obj := range list() {
			extra := s.extraValues(obj.Labels)
			seen := map[string]bool{}
			for _, c := range obj.Conditions {
				if seen[c.Type] {
					continue
				}
				seen[c.Type] = true
				base := []string{obj.Name, obj.Namespace, c.Type, string(c.Status), c.Reason}
				held := now.Sub(c.LastTransitionTime.Time).Seconds()
				ch <- prometheus.MustNewConstMetric(g.count, prometheus.GaugeValue, 1, append(base, extra...)...)
				ch <- prometheus.MustNewConstMetric(g.current, prometheus.GaugeValue, held, append(base, extra...)...)
				if s.kindLabelled {
					kl := append([]string{s.group, s.kind}, base...)
					ch <- prometheus.MustNewConstMetric(o.generic.count, prometheus.GaugeValue, 1, kl...)
					ch <- prometheus.MustNewConstMetric(o.generic.current, prometheus.GaugeValue, held, kl...)
				}
			}
			if obj.DeletionTimestamp.IsZero() {
				continue
			}
			since := now.Sub(obj.DeletionTimestamp).Seconds()
			ch <- prometheus.MustNewConstMetric(g.terminating, prometheus.GaugeValue, since,
				append([]string{obj.Name, obj.Namespace}, extra...)...)
			if s.kindLabelled {
				ch <- prometheus.MustNewConstMetric(o.generic.terminating, prometheus.GaugeValue, since, s.group, s.kind, obj.Name, obj.Namespace)
			}
		}
	}
}

// kindRecorders are a kind's condition transition and termination metrics, recorded on changes.
type kindRecorders struct {
	// transitions and transitionSeconds are nil for NodeClaims, whose status writes record
	// Metrics.NodeClaimConditionTransitions and Metrics.NodeClaimConditionDuration.
	transitions       *prometheus.CounterVec
	transitionSeconds *prometheus.HistogramVec
	terminations      *prometheus.HistogramVec
}

// ObjectChanges holds the condition transition metrics of NodePools, Nodes and EC2NodeClasses
// (operator_<kind>_status_condition_transitions_total, _transition_seconds) and every kind's
// operator_<kind>_termination_duration_seconds and operator_termination_duration_seconds. An informer watching
// the kind records them with RecordConditionChange and RecordTermination.
type ObjectChanges struct {
	kinds   [numObjectKinds]kindRecorders
	generic *prometheus.HistogramVec
}

// NewObjectChanges builds the metrics.
func NewObjectChanges() *ObjectChanges {
	o := &ObjectChanges{generic: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "operator_termination_duration_seconds", Help: helpOf("operator_termination_duration_seconds"),
		Buckets: conditionBuckets,
	}, []string{LabelGroup, LabelKind})}
	for k := range numObjectKinds {
		s := k.spec()
		extra := s.extraLabels()
		r := kindRecorders{terminations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    s.prefix() + "termination_duration_seconds",
			Help:    "Time from the deletion request of a " + s.kind + " until it was gone.",
			Buckets: conditionBuckets,
		}, extra)}
		if k != KindNodeClaim {
			r.transitions = prometheus.NewCounterVec(prometheus.CounterOpts{
				Name: s.prefix() + "status_condition_transitions_total",
				Help: s.kind + " condition changes, by condition type and the status and reason it changed to.",
			}, append([]string{LabelConditionType, LabelConditionStatus, LabelReason}, extra...))
			r.transitionSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
				Name:    s.prefix() + "status_condition_transition_seconds",
				Help:    "Time a " + s.kind + " condition held a status before it changed, by condition type, the status it left and the one it changed to.",
				Buckets: conditionBuckets,
			}, append([]string{LabelConditionType, LabelConditionStatus, LabelToStatus}, extra...))
		}
		o.kinds[k] = r
	}
	return o
}

func (o *ObjectChanges) collectors() []prometheus.Collector {
	out := []prometheus.Collector{o.generic}
	for _, r := range o.kinds {
		out = append(out, r.terminations)
		if r.transitions != nil {
			out = append(out, r.transitions, r.transitionSeconds)
		}
	}
	return out
}

// Describe implements prometheus.Collector.
func (o *ObjectChanges) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range o.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (o *ObjectChanges) Collect(ch chan<- prometheus.Metric) {
	for _, c := range o.collectors() {
		c.Collect(ch)
	}
}

// RecordConditionChange records one observed update of an object of kind k (not NodeClaim: its status writes
// record its transitions): for every condition whose status differs from the one before (or that is new), a
// transition to its status and reason; for a condition that existed before, the time it held the old status
// (from the old lastTransitionTime to the new). Kind-labelled kinds also count in m.ConditionTransitions and
// m.ConditionDuration.
func (m *Metrics) RecordConditionChange(k ObjectKind, labels map[string]string, before, after []metav1.Condition) {
	r := m.ObjectChanges.kinds[k]
	if r.transitions == nil {
		return
	}
	s := k.spec()
	extra := s.extraValues(labels)
	for i := range after {
		cur := &after[i]
		prev := findCondition(before, cur.Type)
		if prev != nil && prev.Status == cur.Status {
			continue
		}
		r.transitions.WithLabelValues(append([]string{cur.Type, string(cur.Status), cur.Reason}, extra...)...).Inc()
		if s.kindLabelled {
			m.ConditionTransitions.WithLabelValues(s.group, s.kind, cur.Type, string(cur.Status), cur.Reason).Inc()
		}
		if prev == nil || prev.LastTransitionTime.IsZero() || cur.LastTransitionTime.IsZero() {
			continue
		}
		held := max(cur.LastTransitionTime.Sub(prev.LastTransitionTime.Time).Seconds(), 0)
		r.transitionSeconds.WithLabelValues(append([]string{cur.Type, string(prev.Status), string(cur.Status)}, extra...)...).Observe(held)
		if s.kindLabelled {
			m.ConditionDuration.WithLabelValues(s.group, s.kind, cur.Type, string(prev.Status), string(cur.Status)).Observe(held)
		}
	}
}

// RecordTermination records that an object of kind k whose deletion was requested at deleted is gone, at gone.
// An object deleted without a deletion request in flight (no finalizer held it) has a zero deleted and is not
// observed.
func (m *Metrics) RecordTermination(k ObjectKind, labels map[string]string, deleted, gone time.Time) {
	if deleted.IsZero() {
		return
	}
	s := k.spec()
	took := max(gone.Sub(deleted).Seconds(), 0)
	m.ObjectChanges.kinds[k].terminations.WithLabelValues(s.extraValues(labels)...).Observe(took)
	if s.kindLabelled {
		m.ObjectChanges.generic.WithLabelValues(s.group, s.kind).Observe(took)
	}
}
