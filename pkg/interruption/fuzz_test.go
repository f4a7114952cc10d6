package interruption

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzParse feeds Parse arbitrary bodies (the committed corpus in testdata/fuzz/FuzzParse holds real events of
// every kind, foreign ones, malformed and oversized ones) and checks it never panics and keeps its contract:
// an error is a ParseError wrapping ErrMalformed with a zero Message; a message has a known kind, sorted
// unique instance ids that look like ids, and at least one id unless it is Unknown. Decide must accept every
// parsed message.
func FuzzParse(f *testing.F) {
	f.Add(`{"detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","detail":{"instance-id":"i-0abc"}}`)
	f.Add(`{"detail-type":"AWS Health Event","source":"aws.health","detail":{"eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"i-1"}]}}`)
	f.Add(`not json`)
	// Oversized (built here rather than committed: it is over 1 MiB): a valid event padded past the limit.
	f.Add(`{"detail-type":"EC2 Spot Instance Interruption Warning","detail":{"instance-id":"i-1"}}` + strings.Repeat(" ", MaxBodyBytes))
	f.Fuzz(func(t *testing.T, body string) {
		msg, err := Parse(body)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not a ParseError wrapping ErrMalformed", err)
			}
			if msg.Kind != "" || msg.InstanceIDs != nil {
				t.Fatalf("a failed parse returned a message: %+v", msg)
			}
			if err.Error() == "" {
				t.Fatal("empty error text")
			}
			return
		}
		switch msg.Kind {
		case KindSpotInterruption, KindRebalanceRecommendation, KindStateChange, KindScheduledChange, KindCapacityReservationInterruption:
			if len(msg.InstanceIDs) == 0 {
				t.Fatalf("%s message names no instance: %+v", msg.Kind, msg)
			}
		case KindUnknown:
		default:
			t.Fatalf("unexpected kind %q", msg.Kind)
		}
		if msg.Kind.MetricLabel() == "" {
			t.Fatalf("kind %q has no metric label", msg.Kind)
		}
		if !slices.IsSorted(msg.InstanceIDs) || len(slices.Compact(slices.Clone(msg.InstanceIDs))) != len(msg.InstanceIDs) {
			t.Fatalf("instance ids not sorted and unique: %q", msg.InstanceIDs)
		}
		for _, id := range msg.InstanceIDs {
			if !strings.HasPrefix(id, "i-") {
				t.Fatalf("%q is not an instance id", id)
			}
		}
		tgp := time.Minute
		now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
		for _, p := range []Policy{DefaultPolicy(), {}} {
			_ = Decide(msg, p, nil, now)
			_ = Decide(msg, p, &tgp, now)
		}
	})
}

func TestParseRejectsOversizedBodies(t *testing.T) {
	event := `{"detail-type":"EC2 Spot Instance Interruption Warning","detail":{"instance-id":"i-1"}}`
	if _, err := Parse(event + strings.Repeat(" ", MaxBodyBytes-len(event))); err != nil {
		t.Fatalf("a body of exactly MaxBodyBytes: %v", err)
	}
	_, err := Parse(event + strings.Repeat(" ", MaxBodyBytes-len(event)+1))
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("a body one byte over MaxBodyBytes: %v, want ErrMalformed", err)
	}
}
