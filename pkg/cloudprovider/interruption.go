package cloudprovider

import (
	"context"
	"time"
)

// QueueMessage is one message received from an interruption queue.
type QueueMessage struct {
	// ID is the queue's message id.
	ID string
	// Body is the message body (an EventBridge envelope).
	Body string
	// Handle is what Delete needs (SQS's receipt handle).
	Handle string
	// SentAt is when the message entered the queue (zero when unknown).
	SentAt time.Time
}

// InterruptionQueue is where interruption messages (spot interruption warnings, rebalance recommendations,
// instance state changes, scheduled maintenance) arrive, and where an offering a spot interruption reclaimed is
// reported so launches avoid it for a while.
type InterruptionQueue interface {
	// Receive waits for up to a provider-defined long-poll time and returns the messages available (possibly none).
	Receive(ctx context.Context) ([]QueueMessage, error)
	// Delete removes a handled message from the queue.
	Delete(ctx context.Context, m QueueMessage) error
	// MarkOfferingUnavailable makes an (instance type, zone, capacity type) offering unavailable for a while.
	MarkOfferingUnavailable(ctx context.Context, reason, instanceType, zone, capacityType string)
}

// ReservationMarker is implemented by interruption queues whose provider launches into capacity reservations: a
// reservation EC2 is reclaiming (a capacity reservation interruption warning) takes no more launches until the
// provider next reads its availability from the cloud.
type ReservationMarker interface {
	MarkReservationUnavailable(ctx context.Context, reservationID string)
}
