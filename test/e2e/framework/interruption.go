package framework

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// InterruptionEvent asks the simulator to put an EventBridge-shaped event into the cluster's interruption queue
// (awssim's admin API, POST /_awssim/events).
type InterruptionEvent struct {
	// Kind is spot-interruption, rebalance, health or state-change.
	Kind string `json:"kind"`
	// InstanceID is the instance the event is about.
	InstanceID string `json:"instanceId"`
	// TerminateAfter (a Go duration, e.g. "30s") terminates the instance after a spot interruption warning.
	TerminateAfter string `json:"terminateAfter,omitempty"`
	// StartTime is a health event's scheduled start (default: in an hour).
	StartTime *time.Time `json:"startTime,omitempty"`
}

// SendInterruptionEvent sends ev into the simulator's default queue (named after the cluster).
func (s *Stack) SendInterruptionEvent(ctx context.Context, ev InterruptionEvent) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encoding event: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.AWSEndpoint+"/_awssim/events", bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("building the event request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("sending %s for %s: %w", ev.Kind, ev.InstanceID, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("sending %s for %s: %s: %s", ev.Kind, ev.InstanceID, resp.Status, body)
	}
	return nil
}
