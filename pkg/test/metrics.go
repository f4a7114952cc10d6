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
