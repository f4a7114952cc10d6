package aws

import (
	"context"
	"strconv"
	"sync"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/providers/aws/capacityreservation"
	"github.com/dovetail/dovetail/pkg/providers/aws/sdk"
	"github.com/dovetail/dovetail/pkg/providers/aws/unavailable"
)

// SQS long-poll parameters of the interruption queue.
const (
	interruptionWaitSeconds = 20
	interruptionMaxMessages = 10
)

// InterruptionQueue reads interruption messages from an SQS queue fed by EventBridge rules. The queue URL is
// looked up once (GetQueueUrl) and remembered.
type InterruptionQueue struct {
	sqs         sdk.SQSAPI
	name        string
	unavailable *unavailable.Cache
	// reservations is the provider's count of room left in capacity reservations.
	reservations *capacityreservation.Tracker

	mu  sync.Mutex
	url string
}

var _ cloudprovider.InterruptionQueue = (*InterruptionQueue)(nil)

// InterruptionQueue returns the interruption queue named name, in the provider's account and region. Offerings
// marked unavailable through it are skipped by the provider's launches.
func (p *CloudProvider) InterruptionQueue(name string) *InterruptionQueue {
	return &InterruptionQueue{sqs: p.clients.SQS, name: name, unavailable: p.unavailable, reservations: p.reservations}
}

// Name returns the queue name.
func (q *InterruptionQueue) Name() string { return q.name }

func (q *InterruptionQueue) queueURL(ctx context.Context) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.url != "" {
		return q.url, nil
	}
	out, err := q.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: awssdk.String(q.name)})
	if err != nil {
		err = sdk.Wrap(err, "getting the URL of interruption queue %s", q.name)
		if sdk.IsNotFound(err) {
			return "", cloudprovider.NewNotFoundError(err)
		}
		return "", err
	}
	q.url = awssdk.ToString(out.QueueUrl)
	return q.url, nil
}

// Receive long-polls the queue (20 s, up to 10 messages). Throttling is returned as a
// *cloudprovider.ThrottledError, a missing queue as a *cloudprovider.NotFoundError.
func (q *InterruptionQueue) Receive(ctx context.Context) ([]cloudprovider.QueueMessage, error) {
	url, err := q.queueURL(ctx)
	if err != nil {
		return nil, err
	}
	out, err := q.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    awssdk.String(url),
		MaxNumberOfMessages:         interruptionMaxMessages,
		WaitTimeSeconds:             interruptionWaitSeconds,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameSentTimestamp},
	})
	if err != nil {
		err = sdk.Wrap(err, "receiving from interruption queue %s", q.name)
		if sdk.IsNotFound(err) {
			q.forgetURL()
			return nil, cloudprovider.NewNotFoundError(err)
		}
		return nil, err
	}
	msgs := make([]cloudprovider.QueueMessage, 0, len(out.Messages))
	for _, m := range out.Messages {
		qm := cloudprovider.QueueMessage{ID: awssdk.ToString(m.MessageId), Body: awssdk.ToString(m.Body),
			Handle: awssdk.ToString(m.ReceiptHandle)}
		if ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
			qm.SentAt = time.UnixMilli(ms)
		}
		msgs = append(msgs, qm)
	}
	return msgs, nil
}

// Delete removes a handled message.
func (q *InterruptionQueue) Delete(ctx context.Context, m cloudprovider.QueueMessage) error {
	url, err := q.queueURL(ctx)
	if err != nil {
		return err
	}
	if _, err := q.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: awssdk.String(url), ReceiptHandle: awssdk.String(m.Handle)}); err != nil {
		return sdk.Wrap(err, "deleting message %s from interruption queue %s", m.ID, q.name)
	}
	return nil
}

// MarkOfferingUnavailable makes the offering unavailable in the provider's cache.
func (q *InterruptionQueue) MarkOfferingUnavailable(ctx context.Context, reason, instanceType, zone, capacityType string) {
	q.unavailable.MarkUnavailable(ctx, reason, unavailable.Offering{InstanceType: instanceType, Zone: zone, CapacityType: capacityType})
}

var _ cloudprovider.ReservationMarker = (*InterruptionQueue)(nil)

// MarkReservationUnavailable leaves the capacity reservation no room for launches until the provider next reads
// its availability from EC2 (DescribeCapacityReservations), as Karpenter does on a capacity reservation
// interruption warning.
func (q *InterruptionQueue) MarkReservationUnavailable(ctx context.Context, reservationID string) {
	if q.reservations == nil || reservationID == "" {
		return
	}
	q.reservations.Unavailable(reservationID)
	log.FromContext(ctx).Info("capacity reservation marked unavailable", "capacity-reservation-id", reservationID)
}

func (q *InterruptionQueue) forgetURL() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.url = ""
}
