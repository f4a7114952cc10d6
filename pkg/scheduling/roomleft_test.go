package scheduling

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestRoomLeft checks how repack scores the room a fit leaves: smaller is tighter, and of two fits leaving the same
// total share free, the one leaving room in both cpu and memory scores lower.
func TestRoomLeft(t *testing.T) {
	vec := func(cpu, mem int64) Vec {
		v := NewDims().Zero()
		v[dimCPU], v[dimMemory] = cpu, mem
		return v
	}
	avail := vec(4000, 8000)
	tests := []struct {
		name      string
		used, req Vec
		want      float64
	}{
		{name: "exact fit", used: vec(3000, 6000), req: vec(1000, 2000), want: 0},
		// the same total share left free (0.5): spread over both resources it scores lower
		{name: "room in both", used: vec(2000, 4000), req: vec(1000, 2000), want: 0.25*0.25 + 0.25*0.25},
		{name: "the same total in cpu alone", used: vec(1000, 6000), req: vec(1000, 2000), want: 0.5 * 0.5},
		{name: "an empty node", used: vec(0, 0), req: vec(0, 0), want: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := roomLeft(&candidate{used: tc.used}, tc.req, avail)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("roomLeft() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
