package cloudprovider

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestLaunchNotices(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	l := NewLaunchNotices(clk, 10*time.Second)
	l.Expect("a", "b", "c")
	l.Arrived("b")
	l.Arrived("never-expected")
	if got := l.Waiting(); got != 2 {
		t.Errorf("Waiting() = %d after 3 expected and 1 arrived, want 2", got)
	}
	clk.Step(5 * time.Second)
	l.Expect("d")
	clk.Step(5 * time.Second)
	if got := l.Waiting(); got != 1 {
		t.Errorf("Waiting() = %d once a and c are past their ttl, want 1 (d)", got)
	}
	// Every launcher busy (waiting in the window too): nothing noted can arrive until one is free.
	l.SetLaunchers(2)
	l.Started()
	if got := l.Waiting(); got != 1 {
		t.Errorf("Waiting() = %d with 1 of 2 launchers busy, want 1", got)
	}
	l.Started()
	if got := l.Waiting(); got != 0 {
		t.Errorf("Waiting() = %d with every launcher busy, want 0", got)
	}
	l.Finished()
	if got := l.Waiting(); got != 1 {
		t.Errorf("Waiting() = %d once a launcher is free again, want 1", got)
	}
	var none *LaunchNotices
	none.SetLaunchers(1)
	none.Started()
	none.Finished()
	none.Expect("x")
	none.Arrived("x")
	if got := none.Waiting(); got != 0 {
		t.Errorf("nil notices: Waiting() = %d, want 0", got)
	}
}

func TestFirstLaunch(t *testing.T) {
	ctx := context.Background()
	if IsFirstLaunch(ctx) {
		t.Error("a plain context says first launch")
	}
	if !IsFirstLaunch(WithFirstLaunch(ctx)) {
		t.Error("WithFirstLaunch is not seen")
	}
}
