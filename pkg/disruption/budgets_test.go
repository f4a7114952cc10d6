package disruption_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
	"github.com/dovetail/dovetail/pkg/disruption"
	"github.com/dovetail/dovetail/pkg/test"
)

func TestAllowedDisruptions(t *testing.T) {
	const (
		drifted = karpv1.DisruptionReasonDrifted
		empty   = karpv1.DisruptionReasonEmpty
		under   = karpv1.DisruptionReasonUnderutilized
		all     = disruption.Unlimited
	)
	// Monday 2026-11-23 10:00 UTC.
	monday10 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name              string
		pool              *karpv1.NodePool
		now               time.Time
		total, disrupting int
		want              map[karpv1.DisruptionReason]int
	}{
		{name: "no budgets: unlimited", pool: test.NodePool("p").Obj(), now: monday10, total: 10,
			want: map[karpv1.DisruptionReason]int{drifted: all, empty: all, under: all}},
		{name: "default 10% of 5 nodes rounds up to 1", pool: test.NodePool("p").Budget("10%").Obj(), now: monday10, total: 5,
			want: map[karpv1.DisruptionReason]int{drifted: 1, empty: 1, under: 1}},
		{name: "10% of 0 nodes is 0", pool: test.NodePool("p").Budget("10%").Obj(), now: monday10, total: 0,
			want: map[karpv1.DisruptionReason]int{drifted: 0, empty: 0, under: 0}},
		{name: "disrupting nodes use the allowance", pool: test.NodePool("p").Budget("3").Obj(), now: monday10, total: 10, disrupting: 2,
			want: map[karpv1.DisruptionReason]int{drifted: 1, empty: 1, under: 1}},
		{name: "never below zero", pool: test.NodePool("p").Budget("1").Obj(), now: monday10, total: 10, disrupting: 4,
			want: map[karpv1.DisruptionReason]int{drifted: 0, empty: 0, under: 0}},
		{name: "a budget with reasons limits only those", pool: test.NodePool("p").Budget("5").Budget("0", drifted).Obj(), now: monday10, total: 10,
			want: map[karpv1.DisruptionReason]int{drifted: 0, empty: 5, under: 5}},
		{name: "the smallest active budget wins", pool: test.NodePool("p").Budget("50%").Budget("2", under).Obj(), now: monday10, total: 10,
			want: map[karpv1.DisruptionReason]int{drifted: 5, empty: 5, under: 2}},
		{name: "business-hours freeze is active on a Monday at 10:00",
			pool: test.NodePool("p").Budget("10%").ScheduledBudget("0", "0 9 * * mon-fri", 8*time.Hour, under).Obj(), now: monday10, total: 20,
			want: map[karpv1.DisruptionReason]int{drifted: 2, empty: 2, under: 0}},
		{name: "business-hours freeze is over at 17:00",
			pool: test.NodePool("p").Budget("10%").ScheduledBudget("0", "0 9 * * mon-fri", 8*time.Hour, under).Obj(),
			now:  time.Date(2026, 11, 23, 17, 0, 0, 0, time.UTC), total: 20,
			want: map[karpv1.DisruptionReason]int{drifted: 2, empty: 2, under: 2}},
		{name: "business-hours freeze is not active on a Sunday",
			pool: test.NodePool("p").ScheduledBudget("0", "0 9 * * mon-fri", 8*time.Hour).Obj(),
			now:  time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), total: 20,
			want: map[karpv1.DisruptionReason]int{drifted: all, empty: all, under: all}},
		{name: "@daily for 1h is active at 00:30 UTC whatever the local zone",
			pool: test.NodePool("p").ScheduledBudget("0", "@daily", time.Hour).Obj(),
			now:  time.Date(2026, 11, 23, 0, 30, 0, 0, time.UTC).In(time.FixedZone("x", 5*3600)), total: 3,
			want: map[karpv1.DisruptionReason]int{drifted: 0, empty: 0, under: 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := disruption.AllowedDisruptions(tc.pool, tc.now, tc.total, tc.disrupting)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("allowed (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAllowedDisruptionsRejectsBadBudgets(t *testing.T) {
	for name, pool := range map[string]*karpv1.NodePool{
		"bad cron":  test.NodePool("p").ScheduledBudget("1", "every day", time.Hour).Obj(),
		"bad nodes": test.NodePool("p").Budget("ten").Obj(),
		"over 100%": test.NodePool("p").Budget("150%").Obj(),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := disruption.AllowedDisruptions(pool, time.Now(), 10, 0)
			var be *disruption.BudgetError
			if !errors.As(err, &be) || be.NodePool != "p" || be.Index != 0 {
				t.Fatalf("want a BudgetError for nodepool p, budget 0; got %v", err)
			}
		})
	}
}

// TestAllowedRepairs: the budget reason Unhealthy (Karpenter v1.15) limits node repair; budgets naming no reason
// limit it too, budgets naming other reasons do not.
func TestAllowedRepairs(t *testing.T) {
	unhealthy, drifted := karpv1.DisruptionReasonUnhealthy, karpv1.DisruptionReasonDrifted
	monday10 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name              string
		pool              *karpv1.NodePool
		total, disrupting int
		want              int
	}{
		{"no budgets: unlimited", test.NodePool("p").Obj(), 10, 0, disruption.Unlimited},
		{"default 10% of 10 nodes", test.NodePool("p").Budget("10%").Obj(), 10, 0, 1},
		{"a budget naming Unhealthy", test.NodePool("p").Budget("5").Budget("0", unhealthy).Obj(), 10, 0, 0},
		{"a budget naming Drifted only", test.NodePool("p").Budget("0", drifted).Obj(), 10, 0, disruption.Unlimited},
		{"disrupting nodes use the allowance", test.NodePool("p").Budget("2", unhealthy).Obj(), 10, 1, 1},
		{"a freeze of repairs in business hours", test.NodePool("p").ScheduledBudget("0", "0 9 * * mon-fri", 8*time.Hour, unhealthy).Obj(), 10, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := disruption.AllowedRepairs(tc.pool, monday10, tc.total, tc.disrupting)
			if err != nil || got != tc.want {
				t.Errorf("AllowedRepairs = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
