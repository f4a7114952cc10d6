package test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// HistogramCount returns how many observations the series of h with the label values holds (0 when none).
func HistogramCount(t testing.TB, h *prometheus.HistogramVec, labelValues ...string) uint64 {
	t.Helper()
	o, err := h.GetMetricWithLabelValues(labelValues...)
	if err != nil {
		t.Fatalf("histogram series %v: %v", labelValues, err)
	}
	m := &dto.Metric{}
	if err := o.(prometheus.Metric).Write(m); err != nil {
		t.Fatalf("reading histogram series %v: %v", labelValues, err)
	}
	return m.GetHistogram().GetSampleCount()
}

// SummaryCount returns how many observations the series of s with the label values holds (0 when none).
func SummaryCount(t testing.TB, s *prometheus.SummaryVec, labelValues ...string) uint64 {
	t.Helper()
	o, err := s.GetMetricWithLabelValues(labelValues...)
	if err != nil {
		t.Fatalf("summary series %v: %v", labelValues, err)
	}
	m := &dto.Metric{}
	if err := o.(prometheus.Metric).Write(m); err != nil {
		t.Fatalf("reading summary series %v: %v", labelValues, err)
	}
	return m.GetSummary().GetSampleCount()
}

// Sum adds up the values of the counter series (or the observation counts of the histogram series) of c whose
// labels include every label of match, whatever their other labels.
func Sum(t testing.TB, c prometheus.Collector, match prometheus.Labels) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	var sum float64
	for s := range ch {
		m := &dto.Metric{}
		if err := s.Write(m); err != nil {
			t.Fatalf("reading series: %v", err)
		}
		found := 0
		for _, l := range m.GetLabel() {
			if v, ok := match[l.GetName()]; ok && v == l.GetValue() {
				found++
			}
		}
		if found != len(match) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}
