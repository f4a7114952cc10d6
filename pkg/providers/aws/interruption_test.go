package aws_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
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

	missing := p.InterruptionQueue("no-such-queue")
	_, err = missing.Receive(ctx)
	if !cloudprovider.IsNotFound(err) || !strings.Contains(err.Error(), "no-such-queue") {
		t.Errorf("Receive on a missing queue = %v, want a NotFoundError naming the queue", err)
	}
}
