package cloudprovider

import (
	"context"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// LaunchNotices tells a cloud provider which launches are on their way: the provisioner notes the NodeClaims a
// pass created, and the provider, when a launch arrives, notes it arrived. A provider that merges identical
// launches (AWS CreateFleet) holds its window open, within its bound, while noted launches have not arrived, so
// the NodeClaims of one pass share a call even when their lifecycle reconciles reach it seconds apart.
// A nil *LaunchNotices notes nothing. Safe for concurrent use.
type LaunchNotices struct {
	clock clock.Clock
	ttl   time.Duration

	mu      sync.Mutex
	pending map[string]time.Time
}

// NewLaunchNotices returns notices that forget a launch that has not arrived ttl after it was noted (its
// NodeClaim may have been deleted, or may wait for its node class).
func NewLaunchNotices(clk clock.Clock, ttl time.Duration) *LaunchNotices {
	return &LaunchNotices{clock: clk, ttl: ttl, pending: map[string]time.Time{}}
}

// Expect notes that the named NodeClaims were created and will be launched.
func (l *LaunchNotices) Expect(names ...string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	for _, n := range names {
		l.pending[n] = now
	}
}

// Arrived notes that the NodeClaim's launch reached the provider (or gave up before); calling it again, or for
// a NodeClaim never expected, does nothing.
func (l *LaunchNotices) Arrived(name string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.pending, name)
}

// Waiting returns how many expected launches have not arrived yet.
func (l *LaunchNotices) Waiting() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	for n, at := range l.pending {
		if now.Sub(at) >= l.ttl {
			delete(l.pending, n)
		}
	}
	return len(l.pending)
}

// firstLaunchKey is the context key of WithFirstLaunch.
type firstLaunchKey struct{}

// WithFirstLaunch tells Create that no instance can have been launched for the NodeClaim yet: this process has
// never tried to launch it and it was created while this process was running its launches (so no earlier
// process could have launched it). Create may then skip looking for an instance already launched for it.
func WithFirstLaunch(ctx context.Context) context.Context {
	return context.WithValue(ctx, firstLaunchKey{}, true)
}

// IsFirstLaunch reports whether ctx carries WithFirstLaunch.
func IsFirstLaunch(ctx context.Context) bool {
	v, _ := ctx.Value(firstLaunchKey{}).(bool)
	return v
}
