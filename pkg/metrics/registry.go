package metrics

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// TextCollector is a collector whose largest families the metrics handler writes as text exposition straight
// from its entries (Nodes, Pods): at 2,000 nodes and 20,000 pods they are some 70,000 series of up to 40 labels,
// which client_golang would build as label pairs, check, sort and encode at each scrape.
type TextCollector interface {
	prometheus.Collector
	// TextFamilies are the names of the families WriteText writes, in name order.
	TextFamilies() []string
	// WriteText writes one of them as text exposition, nothing when it has no series.
	WriteText(w *bufio.Writer, family string) error
	// CollectOthers sends the series of the collector's other families.
	CollectOthers(ch chan<- prometheus.Metric)
}

// Registry is the run's registry: a prometheus.Registry for every use (Gather), and the text exposition of the
// metrics handler (Exposition), which writes the families of the TextCollectors from their entries and encodes the
// others as gathered.
type Registry struct {
	all    *prometheus.Registry
	others *prometheus.Registry
	mu     sync.Mutex
	text   []TextCollector
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{all: prometheus.NewRegistry(), others: prometheus.NewRegistry()}
}

// othersOf is a TextCollector without its text families: what Exposition gathers of it.
type othersOf struct{ TextCollector }

func (o othersOf) Collect(ch chan<- prometheus.Metric) { o.CollectOthers(ch) }

// Register implements prometheus.Registerer.
func (r *Registry) Register(c prometheus.Collector) error {
	if err := r.all.Register(c); err != nil {
		return err
	}
	o := c
	tc, isText := c.(TextCollector)
	if isText {
		o = othersOf{tc}
	}
	if err := r.others.Register(o); err != nil {
		r.all.Unregister(c)
		return err
	}
	if isText {
		r.mu.Lock()
		r.text = append(r.text, tc)
		r.mu.Unlock()
	}
	return nil
}

// MustRegister implements prometheus.Registerer.
func (r *Registry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Unregister implements prometheus.Registerer.
func (r *Registry) Unregister(c prometheus.Collector) bool {
	if !r.all.Unregister(c) {
		return false
	}
	if tc, ok := c.(TextCollector); ok {
		r.others.Unregister(othersOf{tc})
		r.mu.Lock()
		r.text = slices.DeleteFunc(r.text, func(x TextCollector) bool { return x == tc })
		r.mu.Unlock()
	} else {
		r.others.Unregister(c)
	}
	return true
}

// Gather implements prometheus.Gatherer: every family, built by client_golang.
func (r *Registry) Gather() ([]*dto.MetricFamily, error) { return r.all.Gather() }

// Exposition gathers the families of r but the TextCollectors' text families, and those of also, and returns the
// function that writes them all as Prometheus text exposition (format 0.0.4) in name order, the text families
// written from their collectors' entries at that moment. A gathering error, or a name gathered and written both,
// is returned before anything is written.
func (r *Registry) Exposition(also ...prometheus.Gatherer) (func(io.Writer) error, error) {
	families, err := append(prometheus.Gatherers{r.others}, also...).Gather()
	if err != nil {
		return nil, err
	}
	type textFamily struct {
		name string
		c    TextCollector
	}
	var text []textFamily
	r.mu.Lock()
	for _, c := range r.text {
		for _, name := range c.TextFamilies() {
			text = append(text, textFamily{name, c})
		}
	}
	r.mu.Unlock()
	slices.SortFunc(text, func(a, b textFamily) int { return strings.Compare(a.name, b.name) })
	for _, t := range text {
		if _, found := slices.BinarySearchFunc(families, t.name, func(f *dto.MetricFamily, name string) int {
			return strings.Compare(f.GetName(), name)
		}); found {
			return nil, fmt.Errorf("metric family %s is gathered and written from entries both", t.name)
		}
	}
	return func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 64<<10)
		for len(families) > 0 || len(text) > 0 {
			if len(text) == 0 || (len(families) > 0 && families[0].GetName() < text[0].name) {
				if _, err := expfmt.MetricFamilyToText(bw, families[0]); err != nil {
					return fmt.Errorf("writing metric family %s: %w", families[0].GetName(), err)
				}
				families = families[1:]
				continue
			}
			if err := text[0].c.WriteText(bw, text[0].name); err != nil {
				return fmt.Errorf("writing metric family %s: %w", text[0].name, err)
			}
			text = text[1:]
		}
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("writing metrics: %w", err)
		}
		return nil
	}, nil
}
