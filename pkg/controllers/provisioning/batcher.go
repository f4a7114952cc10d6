package provisioning

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Batcher groups triggers into windows: a window opens at the first trigger and closes when no trigger came
// for the idle duration or when it reached the max duration.
type Batcher struct {
	clock   clock.Clock
	idle    time.Duration
	max     time.Duration
	trigger chan struct{}
	// armed, when set (tests), is called each time the idle timer is (re)armed.
	armed func()
}

// NewBatcher returns a batcher on clock c.
func NewBatcher(c clock.Clock, idle, max time.Duration) *Batcher {
	return &Batcher{clock: c, idle: idle, max: max, trigger: make(chan struct{}, 1)}
}

// Trigger records that something worth provisioning for happened. It never blocks.
func (b *Batcher) Trigger() {
	select {
	case b.trigger <- struct{}{}:
	default:
	}
}

// Wait blocks until a window opened by a trigger closes and returns true, or returns false when ctx ends.
func (b *Batcher) Wait(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-b.trigger:
	}
	maxTimer := b.clock.NewTimer(b.max)
	defer maxTimer.Stop()
	idleTimer := b.clock.NewTimer(b.idle)
	defer func() { idleTimer.Stop() }()
	b.notifyArmed()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-b.trigger:
			idleTimer.Stop()
			idleTimer = b.clock.NewTimer(b.idle)
			b.notifyArmed()
		case <-idleTimer.C():
			return true
		case <-maxTimer.C():
			return true
		}
	}
}

func (b *Batcher) notifyArmed() {
	if b.armed != nil {
		b.armed()
	}
}
