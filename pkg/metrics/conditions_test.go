package metrics

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func cond(t string, status metav1.ConditionStatus, reason string, at time.Duration) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(t0.Add(at))}
}

// ncLabels are the labels of the NodeClaim whose conditions TestRecordNodeClaimConditions records.
var ncLabels = map[string]string{"karpenter.k8s.aws/ec2nodeclass": "default", "karpenter.sh/nodepool": "pool-a", "other": "x"}

// observations lists "status/type count sum" (labels in name order) for every series of a histogram vector.
func observations(t *testing.T, h *prometheus.HistogramVec) []string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(h)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				if l.GetName() == LabelConditionType || l.GetName() == LabelConditionStatus {
					labels = append(labels, l.GetValue())
				}
			}
			out = append(out, fmt.Sprintf("%s %d %g", strings.Join(labels, "/"), m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()))
		}
	}
	return out
}

func TestRecordNodeClaimConditions(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after []metav1.Condition
		// wantDurations are "status-left/type count sum-of-seconds".
		wantDurations []string
		// wantTransitions are counter values by type, new status and reason.
		wantTransitions map[[3]string]float64
	}{
		{
			name:            "first Launched=True is timed from creation as Unknown",
			after:           []metav1.Condition{cond("Launched", metav1.ConditionTrue, "Launched", 7*time.Second)},
			wantDurations:   []string{"Unknown/Launched 1 7"},
			wantTransitions: map[[3]string]float64{{"Launched", "True", "Launched"}: 1},
		},
		{
			name:            "False to True is timed from the False transition",
			before:          []metav1.Condition{cond("Registered", metav1.ConditionFalse, "NodeNotFound", 10*time.Second)},
			after:           []metav1.Condition{cond("Registered", metav1.ConditionTrue, "Registered", 25*time.Second)},
			wantDurations:   []string{"False/Registered 1 15"},
			wantTransitions: map[[3]string]float64{{"Registered", "True", "Registered"}: 1},
		},
		{
			name: "an unchanged status (even with a new reason) is not a transition",
			before: []metav1.Condition{
				cond("Launched", metav1.ConditionTrue, "Launched", 5*time.Second),
				cond("Initialized", metav1.ConditionFalse, "NodeNotReady", 30*time.Second),
			},
			after: []metav1.Condition{
				cond("Launched", metav1.ConditionTrue, "Launched", 5*time.Second),
				cond("Initialized", metav1.ConditionFalse, "StartupTaintsExist", 30*time.Second),
			},
		},
		{
			name:  "a condition that starts Unknown has not changed",
			after: []metav1.Condition{cond("Ready", metav1.ConditionUnknown, "AwaitingReconciliation", time.Second)},
		},
		{
			name:            "a transition time before creation (clock skew) observes zero",
			after:           []metav1.Condition{cond("Launched", metav1.ConditionTrue, "Launched", -time.Second)},
			wantDurations:   []string{"Unknown/Launched 1 0"},
			wantTransitions: map[[3]string]float64{{"Launched", "True", "Launched"}: 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewForTest()
			m.RecordNodeClaimConditions(ncLabels, t0, tc.before, tc.after)
			if diff := cmp.Diff(tc.wantDurations, observations(t, m.NodeClaimConditionDuration)); diff != "" {
				t.Errorf("operator_nodeclaim_status_condition_transition_seconds (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDurations, observations(t, m.ConditionDuration)); diff != "" {
				t.Errorf("operator_status_condition_transition_seconds (-want +got):\n%s", diff)
			}
			if got, want := testutil.CollectAndCount(m.NodeClaimConditionTransitions), len(tc.wantTransitions); got != want {
				t.Errorf("transition series = %d, want %d", got, want)
			}
			for k, want := range tc.wantTransitions {
				if got := testutil.ToFloat64(m.NodeClaimConditionTransitions.WithLabelValues(k[0], k[1], k[2], "default", "pool-a")); got != want {
					t.Errorf("operator_nodeclaim_status_condition_transitions_total%v = %v, want %v", k, got, want)
				}
				if got := testutil.ToFloat64(m.ConditionTransitions.WithLabelValues("karpenter.sh", "NodeClaim", k[0], k[1], k[2])); got != want {
					t.Errorf("operator_status_condition_transitions_total%v = %v, want %v", k, got, want)
				}
			}
		})
	}
}

func TestEvictionCode(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		name   string
		err    error
		want   string
		wantOK bool
	}{
		{"accepted", nil, "200", true},
		{"budget", apierrors.NewTooManyRequests("disruption budget", 10), "429", true},
		{"gone", apierrors.NewNotFound(pods, "web-1"), "404", true},
		{"wrapped conflict", fmt.Errorf("evicting: %w", apierrors.NewConflict(pods, "web-1", errors.New("uid"))), "409", true},
		{"no answer", errors.New("connection refused"), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := EvictionCode(tc.err)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("EvictionCode(%v) = %q, %v; want %q, %v", tc.err, got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
