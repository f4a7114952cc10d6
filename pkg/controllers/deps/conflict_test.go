package deps

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestConflictBackoff(t *testing.T) {
	b := NewConflictBackoff()
	var got []time.Duration
	for range 8 {
		got = append(got, b.Conflict("a"))
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 5 * time.Second, 5 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("waits for conflicts in a row (-want +got):\n%s", diff)
	}
	if d := b.Conflict("b"); d != 100*time.Millisecond {
		t.Errorf("another object's first conflict waits %v, want 100ms", d)
	}
	b.Done("a")
	if d := b.Conflict("a"); d != 100*time.Millisecond {
		t.Errorf("first conflict after a clean pass waits %v, want 100ms", d)
	}
}
