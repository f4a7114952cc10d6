package instance

import (
	"time"

	"k8s.io/utils/clock"
)

// withDefaults returns the window with a real clock when it has none and a size of at least one.
func (w BatchWindow) withDefaults() BatchWindow {
	if w.Clock == nil {
		w.Clock = clock.RealClock{}
	}
	if w.Size < 1 {
		w.Size = 1
	}
	return w
}

// waitClosed blocks until the window opened at start closes: sealed (full), Idle after its last arrival (but
// while Waiting says requests are on their way it stays open for another Idle), or Max after start, whichever
// comes first. state reads, under the batcher's lock, whether the window was sealed and when the last request
// joined; arrived is signalled at each arrival.
func (w BatchWindow) waitClosed(start time.Time, state func() (sealed bool, last time.Time), arrived <-chan struct{}) {
	clk := w.Clock
	maxEnd := start.Add(w.Max)
	for {
		sealed, last := state()
		if sealed {
			return
		}
		now := clk.Now()
		if !now.Before(maxEnd) {
			return
		}
		end := last.Add(w.Idle)
		if !now.Before(end) {
			// Idle, but requests known to be on their way may still join: look again after another idle period
			// (until Max).
			if w.Waiting == nil || w.Waiting() == 0 {
				return
			}
			end = now.Add(w.Idle)
		}
		if maxEnd.Before(end) {
			end = maxEnd
		}
		t := clk.NewTimer(end.Sub(now))
		select {
		case <-t.C():
		case <-arrived:
			t.Stop()
		}
	}
}
