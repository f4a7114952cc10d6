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
// Only a free launcher can bring a noted launch: the launching side (the NodeClaim lifecycle controller, which
// runs a bounded number of workers) says how many workers it has (SetLaunchers) and brackets each of their
// passes with Started and Finished. While every worker is busy, which includes waiting in the window, no
// noted launch can arrive and Waiting reports none, so the window closes instead of waiting out its bound:
// with 50 workers a 1,000-NodeClaim scale-out otherwise launched about 50 nodes per 4 s window.
// A nil *LaunchNotices notes nothing. Safe for concurrent use.
type LaunchNotices struct {
	clock clock.Clock
	ttl   time.Duration

	mu      sync.Mutex
	pending map[string]time.Time
	// launchers is how many workers the launching side has (0: unknown, never all busy); busy is how many are
	// in a pass now.
	launchers, busy int
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

// SetLaunchers says how many launches the launching side runs at most at once (0: unknown).
func (l *LaunchNotices) SetLaunchers(n int) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.launchers = n
}

// Started notes that a launcher (a worker) began a pass that may launch; Finished, once for each Started, that
// it ended.
func (l *LaunchNotices) Started() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.busy++
}

// Finished notes that a pass begun with Started ended, however it ended.
func (l *LaunchNotices) Finished() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.busy > 0 {
		l.busy--
	}
}

// Waiting returns how many expected launches have not arrived yet and can still arrive: none while every
// launcher is busy.
func (l *LaunchNotices) Waiting() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.launchers > 0 && l.busy >= l.launchers {
		return 0
	}
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
