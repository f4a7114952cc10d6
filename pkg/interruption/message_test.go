package interruption

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParse(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		body string
		want Message
	}{
		{
			name: "spot interruption",
			body: `{"version":"0","id":"e1","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","time":"2026-11-22T10:00:00Z","resources":["arn:aws:ec2:us-west-2:1:instance/i-0abc"],"detail":{"instance-id":"i-0abc","instance-action":"terminate"}}`,
			want: Message{Kind: KindSpotInterruption, ID: "e1", DetailType: DetailTypeSpotInterruption, Source: SourceEC2, Time: at, InstanceIDs: []string{"i-0abc"}},
		},
		{
			name: "rebalance",
			body: `{"id":"e2","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","detail":{"instance-id":"i-1"}}`,
			want: Message{Kind: KindRebalanceRecommendation, ID: "e2", DetailType: DetailTypeRebalance, Source: SourceEC2, InstanceIDs: []string{"i-1"}},
		},
		{
			name: "capacity reservation interruption",
			body: `{"id":"e9","detail-type":"EC2 Capacity Reservation Instance Interruption Warning","source":"aws.ec2","detail":{"instance-id":"i-1","instance-action":"terminate"}}`,
			want: Message{Kind: KindCapacityReservationInterruption, ID: "e9", DetailType: DetailTypeCapacityReservationInterruption, Source: SourceEC2, InstanceIDs: []string{"i-1"}},
		},
		{
			name: "state change",
			body: `{"id":"e3","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","detail":{"instance-id":"i-1","state":"stopping"}}`,
			want: Message{Kind: KindStateChange, ID: "e3", DetailType: DetailTypeStateChange, Source: SourceEC2, InstanceIDs: []string{"i-1"}, State: "stopping"},
		},
		{
			name: "health scheduled change, RFC 1123 times, entities deduplicated and sorted",
			body: `{"id":"e4","detail-type":"AWS Health Event","source":"aws.health","detail":{"service":"EC2","eventTypeCategory":"scheduledChange","eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","startTime":"Sun, 22 Nov 2026 11:00:00 GMT","endTime":"Sun, 22 Nov 2026 13:00:00 GMT","affectedEntities":[{"entityValue":"i-2"},{"entityValue":"i-1"},{"entityValue":"i-2"}]}}`,
			want: Message{Kind: KindScheduledChange, ID: "e4", DetailType: DetailTypeHealth, Source: SourceHealth, InstanceIDs: []string{"i-1", "i-2"},
				StartTime: at.Add(time.Hour), EndTime: at.Add(3 * time.Hour), EventTypeCode: "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"},
		},
		{
			name: "health scheduled change, RFC 3339 times",
			body: `{"id":"e5","detail-type":"AWS Health Event","source":"aws.health","detail":{"service":"EC2","eventTypeCategory":"scheduledChange","startTime":"2026-11-22T11:00:00Z","affectedEntities":[{"entityValue":"i-1"}]}}`,
			want: Message{Kind: KindScheduledChange, ID: "e5", DetailType: DetailTypeHealth, Source: SourceHealth, InstanceIDs: []string{"i-1"}, StartTime: at.Add(time.Hour)},
		},
		{
			name: "health issue is unknown",
			body: `{"id":"e6","detail-type":"AWS Health Event","source":"aws.health","resources":["i-1"],"detail":{"service":"EC2","eventTypeCategory":"issue"}}`,
			want: Message{Kind: KindUnknown, ID: "e6", DetailType: DetailTypeHealth, Source: SourceHealth, InstanceIDs: []string{"i-1"}},
		},
		{
			name: "other detail type is unknown",
			body: `{"id":"e7","detail-type":"EC2 Something New","source":"aws.ec2","resources":["arn:aws:ec2:r:1:instance/i-9"],"detail":{}}`,
			want: Message{Kind: KindUnknown, ID: "e7", DetailType: "EC2 Something New", Source: SourceEC2, InstanceIDs: []string{"i-9"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	tests := []struct {
		name, body, field string
	}{
		{"not JSON", `hello`, ""},
		{"JSON array", `[1]`, ""},
		{"empty", ``, ""},
		{"no detail type", `{"id":"x"}`, "detail-type"},
		{"bad time", `{"detail-type":"EC2 Instance Rebalance Recommendation","time":"yesterday","detail":{"instance-id":"i-1"}}`, "time"},
		{"spot without detail", `{"detail-type":"EC2 Spot Instance Interruption Warning"}`, "detail"},
		{"spot detail not an object", `{"detail-type":"EC2 Spot Instance Interruption Warning","detail":"x"}`, "detail"},
		{"spot without instance", `{"detail-type":"EC2 Spot Instance Interruption Warning","detail":{}}`, "detail.instance-id"},
		{"state change without state", `{"detail-type":"EC2 Instance State-change Notification","detail":{"instance-id":"i-1"}}`, "detail.state"},
		{"health bad start", `{"detail-type":"AWS Health Event","source":"aws.health","detail":{"eventTypeCategory":"scheduledChange","startTime":"soon","affectedEntities":[{"entityValue":"i-1"}]}}`, "detail.startTime"},
		{"health no instance", `{"detail-type":"AWS Health Event","source":"aws.health","detail":{"eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"vol-1"}]}}`, "detail.affectedEntities"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.body)
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse error = %v, want ErrMalformed", err)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse error %v is not a *ParseError", err)
			}
			if pe.Field != tt.field {
				t.Errorf("field = %q, want %q", pe.Field, tt.field)
			}
		})
	}
}
