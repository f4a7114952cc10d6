package aws_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/interruption"
	"github.com/dovetail/dovetail/pkg/providers/aws/instance"
	awssim "github.com/dovetail/dovetail/pkg/simulator/aws"
)

func TestInterruptionQueueAgainstSimulator(t *testing.T) {
	w := newWorld(t)
	p := w.provider(t, "uid-a")
	ctx := context.Background()
	q := p.InterruptionQueue("dovetail")

	body, err := w.sim.SendEvent(awssim.EventRequest{Kind: awssim.EventHealth, InstanceID: "i-0123", Account: "AKIDACCOUNTA"})
	if err != nil {
		t.Fatalf("SendEvent: %v", err)
	}
	msgs, err := q.Receive(ctx)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	if len(msgs) != 1 || msgs[0].Body != body || msgs[0].Handle == "" || msgs[0].SentAt.IsZero() {
		t.Fatalf("Receive = %+v, want the one message sent with a handle and a sent time", msgs)
	}
	if err := q.Delete(ctx, msgs[0]); err != nil {
		t.Fatalf("Delete: %v", err)
	}

	// A capacity reservation interruption warning reaches the queue as EC2 sends it and parses as its kind.
	p.resolvedNodeClass(t)
	created, err := p.Create(ctx, claim("default-abcde", "m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	id, err := instance.ParseProviderID(created.Status.ProviderID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.sim.SendEvent(awssim.EventRequest{Kind: awssim.EventCapacityReservationInterruption, InstanceID: id}); err != nil {
		t.Fatalf("SendEvent: %v", err)
	}
	msgs, err = q.Receive(ctx)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Receive = %+v, %v; want one message", msgs, err)
	}
	parsed, err := interruption.Parse(msgs[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	if parsed.Kind != interruption.KindCapacityReservationInterruption || parsed.MetricLabel() != "capacity_reservation_interrupted" ||
		len(parsed.InstanceIDs) != 1 || parsed.InstanceIDs[0] != id {
		t.Errorf("parsed %+v, want a capacity reservation interruption of %s (capacity_reservation_interrupted)", parsed, id)
	}

	missing := p.InterruptionQueue("no-such-queue")
	_, err = missing.Receive(ctx)
	if !cloudprovider.IsNotFound(err) || !strings.Contains(err.Error(), "no-such-queue") {
		t.Errorf("Receive on a missing queue = %v, want a NotFoundError naming the queue", err)
	}
}
