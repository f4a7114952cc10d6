package awssim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Event kinds the admin API can send into an SQS queue as EventBridge envelopes.
const (
	EventSpotInterruption = "spot-interruption"
	EventRebalance        = "rebalance"
	EventHealth           = "health"
	EventStateChange      = "state-change"
	// EventCapacityReservationInterruption is EC2's warning that the interruptible capacity reservation the
	// instance runs in is being reclaimed.
	EventCapacityReservationInterruption = "capacity-reservation-interruption"
)

// EventRequest asks the simulator to send an interruption-style event for an instance.
type EventRequest struct {
	// Kind is spot-interruption, rebalance, health, state-change or capacity-reservation-interruption.
	Kind string `json:"kind"`
	// InstanceID is the instance the event is about; its account owns the queue unless Account is set.
	InstanceID string `json:"instanceId"`
	// Queue names the SQS queue (default: the first configured queue, i.e. the cluster name).
	Queue string `json:"queue,omitempty"`
	// Account is the access key id of the account whose queue receives the event (default: the instance's).
	Account string `json:"account,omitempty"`
	// State is the state-change state (default: the instance's current state).
	State string `json:"state,omitempty"`
	// StartTime/EndTime bound a health event's scheduled change (default: in 1h, for 2h).
	StartTime *time.Time `json:"startTime,omitempty"`
	EndTime   *time.Time `json:"endTime,omitempty"`
	// TerminateAfter terminates the instance after this delay (spot-interruption and
	// capacity-reservation-interruption default 2m; "-1s" never).
	TerminateAfter *Duration `json:"terminateAfter,omitempty"`
}

// envelope is an EventBridge event as delivered to SQS.
type envelope struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       string          `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

// SendEvent builds the EventBridge envelope for req and enqueues it; it returns the message body.
func (s *Simulator) SendEvent(req EventRequest) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	owner, inst := s.findInstanceLocked(req.InstanceID)
	if inst == nil && req.Kind != EventStateChange && req.Kind != EventHealth {
		return "", fmt.Errorf("instance %q not found in any account", req.InstanceID)
	}
	target := owner
	if req.Account != "" {
		target = s.accountLocked(req.Account)
	}
	if target == nil {
		if len(s.accounts) != 1 {
			return "", fmt.Errorf("instance %q is unknown; name the account whose queue gets the event", req.InstanceID)
		}
		for _, a := range s.accounts {
			target = a
		}
	}
	qName := req.Queue
	if qName == "" {
		qName = s.opts.Queues[0]
	}
	q, ok := target.queues[qName]
	if !ok {
		return "", fmt.Errorf("queue %q does not exist in account %s", qName, target.key)
	}
	now := s.clock.Now().UTC()
	number := target.number
	if owner != nil {
		number = owner.number
	}
	arn := fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", s.opts.Region, number, req.InstanceID)
	env := envelope{Version: "0", ID: uuidLike(s.nextIDLocked("ev")), Source: "aws.ec2", Account: number,
		Time: now.Format(time.RFC3339), Region: s.opts.Region, Resources: []string{arn}}
	var detail any
	switch req.Kind {
	case EventSpotInterruption:
		env.DetailType = "EC2 Spot Instance Interruption Warning"
		detail = map[string]string{"instance-id": req.InstanceID, "instance-action": "terminate"}
		after := 2 * time.Minute
		if req.TerminateAfter != nil {
			after = time.Duration(*req.TerminateAfter)
		}
		if after >= 0 && inst != nil {
			inst.terminateAt = now.Add(after)
		}
	case EventCapacityReservationInterruption:
		env.DetailType = "EC2 Capacity Reservation Instance Interruption Warning"
		detail = map[string]string{"instance-id": req.InstanceID, "instance-action": "terminate"}
		after := 2 * time.Minute
		if req.TerminateAfter != nil {
			after = time.Duration(*req.TerminateAfter)
		}
		if after >= 0 && inst != nil {
			inst.terminateAt = now.Add(after)
		}
	case EventRebalance:
		env.DetailType = "EC2 Instance Rebalance Recommendation"
		detail = map[string]string{"instance-id": req.InstanceID}
	case EventStateChange:
		env.DetailType = "EC2 Instance State-change Notification"
		state := req.State
		if state == "" && inst != nil {
			state = inst.State
		}
		if state == "" {
			return "", fmt.Errorf("state-change for unknown instance %q needs a state", req.InstanceID)
		}
		detail = map[string]string{"instance-id": req.InstanceID, "state": state}
	case EventHealth:
		env.DetailType = "AWS Health Event"
		env.Source = "aws.health"
		env.Resources = []string{req.InstanceID}
		start := now.Add(time.Hour)
		if req.StartTime != nil {
			start = req.StartTime.UTC()
		}
		end := start.Add(2 * time.Hour)
		if req.EndTime != nil {
			end = req.EndTime.UTC()
		}
		detail = map[string]any{
			"eventArn":          fmt.Sprintf("arn:aws:health:%s::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/%s", s.opts.Region, env.ID),
			"service":           "EC2",
			"eventTypeCode":     "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
			"eventTypeCategory": "scheduledChange",
			"startTime":         start.Format(http.TimeFormat),
			"endTime":           end.Format(http.TimeFormat),
			"eventDescription": []map[string]string{{"language": "en_US",
				"latestDescription": "EC2 has detected degradation of the underlying hardware hosting your instance; it is scheduled for retirement."}},
			"affectedEntities": []map[string]string{{"entityValue": req.InstanceID}},
		}
	default:
		return "", fmt.Errorf("event kind %q is not one of %s, %s, %s, %s, %s", req.Kind, EventSpotInterruption, EventRebalance, EventHealth,
			EventStateChange, EventCapacityReservationInterruption)
	}
	d, err := json.Marshal(detail)
	if err != nil {
		return "", fmt.Errorf("encoding event detail: %w", err)
	}
	env.Detail = d
	b, err := json.Marshal(env)
	if err != nil {
		return "", fmt.Errorf("encoding event: %w", err)
	}
	s.enqueueLocked(q, string(b), 0)
	s.log.Info("event sent", "kind", req.Kind, "instance-id", req.InstanceID, "queue", qName, "account", target.key)
	return string(b), nil
}

func (s *Simulator) findInstanceLocked(id string) (*account, *instance) {
	for _, key := range sortedKeys(s.accounts) {
		a := s.accounts[key]
		if i, ok := a.instances[id]; ok {
			return a, i
		}
	}
	return nil, nil
}
