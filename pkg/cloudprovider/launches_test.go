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
	if got, free := l.Waiting(0); got != 2 || !free {
		t.Errorf("Waiting(0) = %d, %v after 3 expected and 1 arrived, want 2, true", got, free)
	}
	clk.Step(5 * time.Second)
	l.Expect("d")
	clk.Step(5 * time.Second)
	if got, _ := l.Waiting(0); got != 1 {
		t.Errorf("Waiting(0) = %d once a and c are past their ttl, want 1 (d)", got)
	}
	l.SetLaunchers(2)
	for _, tt := range []struct {
		name     string
		busy     int
		inWindow int
		want     int
		wantFree bool
	}{
		{name: "a launcher free", busy: 1, inWindow: 1, want: 1, wantFree: true},
		// Both busy, one with other work: d can come once it finishes.
		{name: "every launcher busy, one elsewhere", busy: 2, inWindow: 1, want: 1, wantFree: false},
		// Both wait in a window: nothing noted can arrive until the window closes.
		{name: "every launcher in a window", busy: 2, inWindow: 2, want: 0, wantFree: false},
	} {
		for range tt.busy {
			l.Started()
		}
		got, free := l.Waiting(tt.inWindow)
		if got != tt.want || free != tt.wantFree {
			t.Errorf("%s: Waiting(%d) = %d, %v, want %d, %v", tt.name, tt.inWindow, got, free, tt.want, tt.wantFree)
		}
		for range tt.busy {
			l.Finished()
		}
	}
	l.Finished() // more Finished than Started does not go below zero
	if got, free := l.Waiting(0); got != 1 || !free {
		t.Errorf("Waiting(0) = %d, %v once every launcher is free again, want 1, true", got, free)
	}
	var none *LaunchNotices
	none.SetLaunchers(1)
	none.Started()
	none.Finished()
	none.Expect("x")
	none.Arrived("x")
	if got, _ := none.Waiting(0); got != 0 {
		t.Errorf("nil notices: Waiting(0) = %d, want 0", got)
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
