package interruption

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/dovetail/dovetail/pkg/cloudprovider"
	"github.com/dovetail/dovetail/pkg/test"
)

// failingQueue fails every Receive with a throttling error and records when each call came (on the fake clock).
type failingQueue struct {
	fakeQueue
	now   func() time.Time
	mu    sync.Mutex
	calls []time.Time
}

func (q *failingQueue) Receive(context.Context) ([]cloudprovider.QueueMessage, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls = append(q.calls, q.now())
	return nil, cloudprovider.NewThrottledError(errors.New("Throttling: Rate exceeded"))
}

func (q *failingQueue) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.calls)
}

// TestRunBacksOffWhenThrottled: consecutive receive failures wait 1 s, 2 s, 4 s, … (capped at a minute) on the
// injected clock before retrying.
func TestRunBacksOffWhenThrottled(t *testing.T) {
	f := newFixture(t)
	q := &failingQueue{now: f.clock.Now}
	f.c.queue = q
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.c.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	for i, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		test.Eventually(t, 5*time.Second, func() (bool, string) {
			return q.count() == i+1 && f.clock.HasWaiters(), "waiting for the receive and the back-off timer"
		})
		f.clock.Step(wait - time.Millisecond)
		if !f.clock.HasWaiters() || q.count() != i+1 {
			t.Fatalf("retry %d came before its %s back-off", i+1, wait)
		}
		f.clock.Step(time.Millisecond)
	}
	test.Eventually(t, 5*time.Second, func() (bool, string) { return q.count() == 4, "waiting for the fourth receive" })
}
