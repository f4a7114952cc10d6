package interruption

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	karpv1 "github.com/dovetail/dovetail/api/karpenter/v1"
)

// Kind is the type of an interruption message.
type Kind string

// Message kinds.
const (
	KindSpotInterruption        Kind = "SpotInterruption"
	KindRebalanceRecommendation Kind = "RebalanceRecommendation"
	KindStateChange             Kind = "StateChange"
	KindScheduledChange         Kind = "ScheduledChange"
	// KindCapacityReservationInterruption: EC2 reclaims the interruptible capacity reservation the instance runs in.
	KindCapacityReservationInterruption Kind = "CapacityReservationInterruption"
	KindUnknown                         Kind = "Unknown"
)

// EventBridge detail types and sources the parser recognises.
const (
	DetailTypeSpotInterruption = "EC2 Spot Instance Interruption Warning"
	DetailTypeRebalance        = "EC2 Instance Rebalance Recommendation"
	DetailTypeStateChange      = "EC2 Instance State-change Notification"
	// DetailTypeCapacityReservationInterruption is EC2's warning that an interruptible capacity reservation is
	// reclaimed.
	DetailTypeCapacityReservationInterruption = "EC2 Capacity Reservation Instance Interruption Warning"
	DetailTypeHealth                          = "AWS Health Event"
	SourceEC2                                 = "aws.ec2"
	SourceHealth                              = "aws.health"
)

// MetricLabel is the message_type label of karpenter_interruption_received_messages_total.
func (k Kind) MetricLabel() string {
	switch k {
	case KindSpotInterruption:
		return karpv1.MetricReasonSpotInterrupted
	case KindRebalanceRecommendation:
		return karpv1.MetricReasonRebalanceRecommendation
	case KindStateChange:
		// A Message names the state (Message.MetricLabel); without it, a state change counts as a termination.
		return karpv1.MetricReasonInstanceTerminated
	case KindScheduledChange:
		return karpv1.MetricReasonScheduledChange
	case KindCapacityReservationInterruption:
		return karpv1.MetricReasonCapacityReservationInterrupted
	default:
		return MetricLabelNoOp
	}
}

// MetricLabelNoOp is the message_type of a message no handler acts on, as Karpenter names it.
const MetricLabelNoOp = "no_op"

// MetricLabel is the message_type label of karpenter_interruption_received_messages_total, as Karpenter names
// message kinds: a state change is instance_stopped when the instance is stopping or stopped and
// instance_terminated otherwise.
func (m Message) MetricLabel() string {
	if m.Kind == KindStateChange && (m.State == "stopping" || m.State == "stopped") {
		return karpv1.MetricReasonInstanceStopped
	}
	return m.Kind.MetricLabel()
}

// Message is a parsed interruption message.
type Message struct {
	Kind Kind
	// ID is the EventBridge event id.
	ID string
	// DetailType and Source are the envelope's, kept for logs (and for Unknown messages).
	DetailType string
	Source     string
	// Time is when EventBridge emitted the event (zero when the envelope has none).
	Time time.Time
	// InstanceIDs are the EC2 instances the message concerns, sorted and without duplicates.
	InstanceIDs []string
	// State is the new instance state of a StateChange (for example "stopping").
	State string
	// StartTime and EndTime bound a ScheduledChange (zero when the event does not say).
	StartTime time.Time
	EndTime   time.Time
	// EventTypeCode is the AWS Health event type of a ScheduledChange (for example
	// AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED).
	EventTypeCode string
}

// MaxBodyBytes is the largest message body Parse reads: SQS's own limit (1 MiB). A longer body is no
// EventBridge event and is rejected before it is decoded.
const MaxBodyBytes = 1 << 20

// ErrMalformed is wrapped by every parse error: the body is not an interruption message Dovetail can read.
var ErrMalformed = errors.New("malformed interruption message")

// ParseError says why a message body could not be parsed.
type ParseError struct {
	// Field is the envelope or detail field at fault ("" for the body as a whole).
	Field string
	Err   error
}

func (e *ParseError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%v: %v", ErrMalformed, e.Err)
	}
	return fmt.Sprintf("%v: field %q: %v", ErrMalformed, e.Field, e.Err)
}

// Unwrap returns the cause; errors.Is(err, ErrMalformed) also holds.
func (e *ParseError) Unwrap() []error { return []error{ErrMalformed, e.Err} }

type envelope struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Time       string          `json:"time"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

type ec2Detail struct {
	InstanceID     string `json:"instance-id"`
	InstanceAction string `json:"instance-action"`
	State          string `json:"state"`
}

type healthDetail struct {
	Service           string `json:"service"`
	EventTypeCategory string `json:"eventTypeCategory"`
	EventTypeCode     string `json:"eventTypeCode"`
	StartTime         string `json:"startTime"`
	EndTime           string `json:"endTime"`
	AffectedEntities  []struct {
		EntityValue string `json:"entityValue"`
	} `json:"affectedEntities"`
}

// Parse reads an SQS message body holding an EventBridge envelope. Envelopes of other detail types parse as
// KindUnknown (with their instance ids when the resources name instances); bodies that are not envelopes, or
// recognised events missing the fields Dovetail needs, return a *ParseError.
func Parse(body string) (Message, error) {
	if len(body) > MaxBodyBytes {
		return Message{}, &ParseError{Err: fmt.Errorf("body of %d bytes exceeds %d", len(body), MaxBodyBytes)}
	}
	var env envelope
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		return Message{}, &ParseError{Err: fmt.Errorf("not a JSON object: %w", err)}
	}
	if env.DetailType == "" {
		return Message{}, &ParseError{Field: "detail-type", Err: errors.New("missing")}
	}
	m := Message{Kind: KindUnknown, ID: env.ID, DetailType: env.DetailType, Source: env.Source}
	if env.Time != "" {
		t, err := time.Parse(time.RFC3339, env.Time)
		if err != nil {
			return Message{}, &ParseError{Field: "time", Err: err}
		}
		m.Time = t
	}
	switch {
	case env.DetailType == DetailTypeSpotInterruption, env.DetailType == DetailTypeRebalance, env.DetailType == DetailTypeStateChange,
		env.DetailType == DetailTypeCapacityReservationInterruption:
		var d ec2Detail
		if err := unmarshalDetail(env.Detail, &d); err != nil {
			return Message{}, err
		}
		if d.InstanceID == "" {
			return Message{}, &ParseError{Field: "detail.instance-id", Err: errors.New("missing")}
		}
		if !strings.HasPrefix(d.InstanceID, "i-") {
			// No cluster owns it: left in the queue as foreign, it would come back until it expired.
			return Message{}, &ParseError{Field: "detail.instance-id", Err: fmt.Errorf("%q is not an instance id", d.InstanceID)}
		}
		m.InstanceIDs = []string{d.InstanceID}
		switch env.DetailType {
		case DetailTypeSpotInterruption:
			m.Kind = KindSpotInterruption
		case DetailTypeRebalance:
			m.Kind = KindRebalanceRecommendation
		case DetailTypeCapacityReservationInterruption:
			m.Kind = KindCapacityReservationInterruption
		default:
			if d.State == "" {
				return Message{}, &ParseError{Field: "detail.state", Err: errors.New("missing")}
			}
			m.Kind, m.State = KindStateChange, d.State
		}
	case env.DetailType == DetailTypeHealth || env.Source == SourceHealth:
		var d healthDetail
		if err := unmarshalDetail(env.Detail, &d); err != nil {
			return Message{}, err
		}
		if d.EventTypeCategory != "scheduledChange" || (d.Service != "" && d.Service != "EC2") {
			m.InstanceIDs = instanceIDs(env.Resources)
			return m, nil
		}
		m.Kind, m.EventTypeCode = KindScheduledChange, d.EventTypeCode
		var err error
		if m.StartTime, err = parseHealthTime(d.StartTime); err != nil {
			return Message{}, &ParseError{Field: "detail.startTime", Err: err}
		}
		if m.EndTime, err = parseHealthTime(d.EndTime); err != nil {
			return Message{}, &ParseError{Field: "detail.endTime", Err: err}
		}
		var ids []string
		for _, e := range d.AffectedEntities {
			if strings.HasPrefix(e.EntityValue, "i-") {
				ids = append(ids, e.EntityValue)
			}
		}
		if len(ids) == 0 {
			return Message{}, &ParseError{Field: "detail.affectedEntities", Err: errors.New("names no EC2 instance")}
		}
		m.InstanceIDs = dedupe(ids)
	default:
		m.InstanceIDs = instanceIDs(env.Resources)
	}
	return m, nil
}

func unmarshalDetail(raw json.RawMessage, into any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return &ParseError{Field: "detail", Err: errors.New("missing")}
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return &ParseError{Field: "detail", Err: err}
	}
	return nil
}

// parseHealthTime reads AWS Health's times (RFC 1123 with GMT, for example "Sat, 05 Jun 2021 16:00:00 GMT"), also
// accepting RFC 3339. An empty string is the zero time.
func parseHealthTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(http.TimeFormat, s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither RFC 1123 nor RFC 3339", s)
	}
	return t.UTC(), nil
}

// instanceIDs extracts instance ids from resource ARNs (arn:aws:ec2:…:instance/i-…) or bare ids.
func instanceIDs(resources []string) []string {
	var ids []string
	for _, r := range resources {
		id := r[strings.LastIndex(r, "/")+1:]
		if strings.HasPrefix(id, "i-") {
			ids = append(ids, id)
		}
	}
	return dedupe(ids)
}

func dedupe(ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	sort.Strings(ids)
	out := ids[:1]
	for _, id := range ids[1:] {
		if id != out[len(out)-1] {
			out = append(out, id)
		}
	}
	return out
}
