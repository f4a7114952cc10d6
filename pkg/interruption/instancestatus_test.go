package interruption

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
)

func TestDecideStatus(t *testing.T) {
	now := time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)
	check := func(cat cloudprovider.StatusCategory, since time.Duration) cloudprovider.StatusCheck {
		return cloudprovider.StatusCheck{Category: cat, Name: "reachability", ImpairedSince: now.Add(-since)}
	}
	event := cloudprovider.StatusCheck{Category: cloudprovider.StatusCategoryEvent, Name: "instance-retirement", NotBefore: now.Add(72 * time.Hour)}
	for _, tc := range []struct {
		name       string
		checks     []cloudprovider.StatusCheck
		ok         bool
		categories []cloudprovider.StatusCategory
		forceful   bool
		reason     string
	}{
		{name: "nothing failing", ok: false},
		{name: "instance check failing 119s: tolerated", checks: []cloudprovider.StatusCheck{check(cloudprovider.StatusCategoryInstance, 119*time.Second)}},
		{name: "instance check failing 120s: replaced forcefully", checks: []cloudprovider.StatusCheck{check(cloudprovider.StatusCategoryInstance, 120*time.Second)},
			ok: true, categories: []cloudprovider.StatusCategory{cloudprovider.StatusCategoryInstance}, forceful: true, reason: "instance_status"},
		{name: "system check failing 10m", checks: []cloudprovider.StatusCheck{check(cloudprovider.StatusCategorySystem, 10*time.Minute)},
			ok: true, categories: []cloudprovider.StatusCategory{cloudprovider.StatusCategorySystem}, forceful: true, reason: "system_status"},
		{name: "check with no start time counts from now", checks: []cloudprovider.StatusCheck{{Category: cloudprovider.StatusCategorySystem, Name: "reachability"}}},
		{name: "scheduled event days ahead: drained at once, not forcefully", checks: []cloudprovider.StatusCheck{event},
			ok: true, categories: []cloudprovider.StatusCategory{cloudprovider.StatusCategoryEvent}, reason: "event_status"},
		{name: "event and young system check: the event acts", checks: []cloudprovider.StatusCheck{event, check(cloudprovider.StatusCategorySystem, time.Second)},
			ok: true, categories: []cloudprovider.StatusCategory{cloudprovider.StatusCategoryEvent}, reason: "event_status"},
		{name: "event and old instance check: forceful, reason instance_status", checks: []cloudprovider.StatusCheck{event, check(cloudprovider.StatusCategoryInstance, time.Hour)},
			ok: true, categories: []cloudprovider.StatusCategory{cloudprovider.StatusCategoryEvent, cloudprovider.StatusCategoryInstance}, forceful: true, reason: "instance_status"},
		{name: "unknown category ignored", checks: []cloudprovider.StatusCheck{{Category: "EBSStatus", ImpairedSince: now.Add(-time.Hour)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := DecideStatus(cloudprovider.InstanceStatus{InstanceID: "i-1", Checks: tc.checks}, now)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.ok, d)
			}
			if !ok {
				return
			}
			if d := cmp.Diff(tc.categories, d.Categories); d != "" {
				t.Errorf("categories (-want +got):\n%s", d)
			}
			if d.Forceful != tc.forceful || d.DisruptionReason() != tc.reason {
				t.Errorf("forceful %v reason %q, want %v %q", d.Forceful, d.DisruptionReason(), tc.forceful, tc.reason)
			}
			if d.Message() == "" {
				t.Error("empty message")
			}
		})
	}
}
